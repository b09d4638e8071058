package kubeletflags

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// DropInExtension is the suffix of the files LoadConfig merges from the
// drop-in directory (--config-dir); others are skipped.
const DropInExtension = ".conf"

// LoadedConfig is a KubeletConfiguration as LoadConfig read it.
type LoadedConfig struct {
	// Config is the --config file with the drop-ins merged over it, not
	// defaulted: what no file set is zero or nil.
	Config *kubeletconfigv1beta1.KubeletConfiguration
	// Lenient is the strict decoding error of the --config file when it
	// decoded only leniently (an unknown or duplicate field): the kubelet
	// logs it ("Using lenient decoding as strict decoding failed") and
	// goes on.
	Lenient error
	// UnknownDropInFields are the drop-ins' strict decoding errors, one
	// per file with an unknown field. The kubelet merges drop-ins
	// untyped, so it drops such fields silently; an agent may log them.
	UnknownDropInFields []error
	// SkippedDropIns are the drop-in directory's files without the .conf
	// suffix, which the kubelet skips (and logs at V(4)).
	SkippedDropIns []string
}

// LoadConfig reads the kubelet's --config file and --config-dir drop-in
// directory as the kubelet v1.37 does; either may be empty.
//
// The file must say apiVersion kubelet.config.k8s.io/v1beta1 and kind
// KubeletConfiguration; an unknown or duplicate field is decoded
// leniently (Lenient). Its relative paths are made relative to its
// directory (ResolveRelativePaths).
//
// The drop-in directory is walked in lexical order, subdirectories
// included; each file ending in .conf must say the same apiVersion and
// kind, and is applied over what came before as a JSON merge patch
// (RFC 7386): a field it sets replaces the earlier value whole (lists and
// maps included), a field set to null is unset. Relative paths in
// drop-ins are left as they are, as in the kubelet. Flags given on the
// command line still win over all of it (Take, ApplyConfigFlags).
func LoadConfig(file, dropInDir string) (*LoadedConfig, error) {
	out := &LoadedConfig{Config: &kubeletconfigv1beta1.KubeletConfiguration{}}
	if file != "" {
		kc, lenient, err := decodeConfigFile(file)
		if err != nil {
			return nil, fmt.Errorf("--config %s: %w", file, err)
		}
		ResolveRelativePaths(kc, filepath.Dir(file))
		out.Config, out.Lenient = kc, lenient
	}
	if dropInDir == "" {
		return out, nil
	}
	merged, err := json.Marshal(out.Config)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(dropInDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if filepath.Ext(d.Name()) != DropInExtension {
			out.SkippedDropIns = append(out.SkippedDropIns, path)
			return nil
		}
		patch, unknown, err := decodeDropIn(path)
		if err != nil {
			return fmt.Errorf("drop-in %s: %w", path, err)
		}
		if unknown != nil {
			out.UnknownDropInFields = append(out.UnknownDropInFields, fmt.Errorf("drop-in %s: %w", path, unknown))
		}
		if merged, err = jsonpatch.MergePatch(merged, patch); err != nil {
			return fmt.Errorf("drop-in %s: merging: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--config-dir %s: %w", dropInDir, err)
	}
	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := json.Unmarshal(merged, kc); err != nil {
		return nil, fmt.Errorf("--config-dir %s: the merged configuration: %w", dropInDir, err)
	}
	out.Config = kc
	return out, nil
}

// decodeConfigFile decodes strictly, then leniently when the strict
// error is only an unknown or duplicate field.
func decodeConfigFile(path string) (*kubeletconfigv1beta1.KubeletConfiguration, error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	strictErr := yaml.UnmarshalStrict(data, kc)
	if strictErr != nil {
		kc = &kubeletconfigv1beta1.KubeletConfiguration{}
		if err := yaml.Unmarshal(data, kc); err != nil {
			return nil, nil, strictErr
		}
	}
	if err := checkKind(kc.APIVersion, kc.Kind); err != nil {
		return nil, nil, err
	}
	return kc, strictErr, nil
}

// decodeDropIn returns the drop-in as JSON, as written, and its strict
// decoding error when it has unknown fields. Syntax errors and duplicate
// fields are errors, as in the kubelet.
func decodeDropIn(path string) (patch []byte, unknown error, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var fields map[string]any
	if err := yaml.UnmarshalStrict(data, &fields); err != nil {
		return nil, nil, err
	}
	apiVersion, _ := fields["apiVersion"].(string)
	kind, _ := fields["kind"].(string)
	if err := checkKind(apiVersion, kind); err != nil {
		return nil, nil, err
	}
	if patch, err = json.Marshal(fields); err != nil {
		return nil, nil, err
	}
	if err := yaml.UnmarshalStrict(data, &kubeletconfigv1beta1.KubeletConfiguration{}); err != nil {
		unknown = err
		if err := yaml.Unmarshal(data, &kubeletconfigv1beta1.KubeletConfiguration{}); err != nil {
			return nil, nil, err // a field of the wrong type
		}
	}
	return patch, unknown, nil
}

// ErrConfigKind is what LoadConfig's error wraps when a file does not say
// apiVersion kubelet.config.k8s.io/v1beta1, kind KubeletConfiguration.
var ErrConfigKind = errors.New("want apiVersion " + kubeletconfigv1beta1.SchemeGroupVersion.String() + ", kind KubeletConfiguration")

func checkKind(apiVersion, kind string) error {
	if kind != "KubeletConfiguration" || apiVersion != kubeletconfigv1beta1.SchemeGroupVersion.String() {
		return fmt.Errorf("apiVersion/kind: Unsupported value: %q/%q: %w", apiVersion, kind, ErrConfigKind)
	}
	return nil
}

// Log logs what the kubelet logs of its config files: the strict decoding
// error it went past, the drop-in fields it ignored, and (at V(4)) the
// files in the drop-in directory it skipped. A nil LoadedConfig logs
// nothing.
func (l *LoadedConfig) Log(log logr.Logger) {
	if l == nil {
		return
	}
	if l.Lenient != nil {
		log.Info("Using lenient decoding as strict decoding failed", "err", l.Lenient.Error())
	}
	for _, err := range l.UnknownDropInFields {
		log.Info("KubeletConfiguration drop-in field unknown, ignored", "err", err.Error())
	}
	for _, f := range l.SkippedDropIns {
		log.V(4).Info("Skipped file in drop-in directory (does not have .conf extension)", "file", f)
	}
}
