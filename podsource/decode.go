package podsource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Parsed is one pod of a manifest, ready for a source: either Pod (decoded,
// defaulted with the API's and the kubelet's defaults, validated) or Err.
type Parsed struct {
	Pod *v1.Pod
	// Key is "namespace/name" as written in the manifest (namespace
	// "default" if absent), best effort even for an invalid pod; it lets a
	// source keep the last good version of a pod that became invalid.
	Key string
	Err *ManifestError
}

// ParseOptions say how to decode and default a manifest.
type ParseOptions struct {
	// Kind is SourceFile or SourceHTTP: the config.source annotation, and
	// which UID hash (host+file or url).
	Kind string
	// Origin is the file path or URL; it is hashed into generated UIDs and
	// named in errors.
	Origin string
	// NodeName is the node the pods are for.
	NodeName string
	// Strict rejects unknown and duplicate fields (each reported with its
	// path, through sigs.k8s.io/json). Without it unknown fields are
	// ignored, as the kubelet does.
	Strict bool
	// AllowList accepts a v1 PodList (or List) as well as a Pod.
	AllowList bool
}

// Parse decodes a YAML or JSON manifest holding a v1 Pod (or, with
// AllowList, a PodList) and prepares each pod: API defaults, kubelet
// defaults, validation. An error for the whole manifest (not YAML/JSON,
// wrong kind) is returned as a *ManifestError; errors of single list items
// are in their Parsed, with paths under items[i].
func Parse(data []byte, o ParseOptions) ([]Parsed, error) {
	js, err := yaml.YAMLToJSON(data)
	if o.Strict && err == nil {
		js, err = yaml.YAMLToJSONStrict(data)
	}
	if err != nil {
		return nil, &ManifestError{Origin: o.Origin, Err: err}
	}
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, &ManifestError{Origin: o.Origin, Err: notAnObject(js, err)}
	}
	var fe field.ErrorList
	if head.APIVersion != "v1" {
		if head.APIVersion == "" {
			fe = append(fe, field.Required(field.NewPath("apiVersion"), `must be "v1"`))
		} else {
			fe = append(fe, field.NotSupported(field.NewPath("apiVersion"), head.APIVersion, []string{"v1"}))
		}
	}
	isList := o.AllowList && (head.Kind == "PodList" || head.Kind == "List")
	if head.Kind != "Pod" && !isList {
		kinds := []string{"Pod"}
		if o.AllowList {
			kinds = append(kinds, "PodList", "List")
		}
		if head.Kind == "" {
			fe = append(fe, field.Required(field.NewPath("kind"), "one of "+strings.Join(kinds, ", ")))
		} else {
			fe = append(fe, field.NotSupported(field.NewPath("kind"), head.Kind, kinds))
		}
	}
	if len(fe) > 0 {
		return nil, &ManifestError{Origin: o.Origin, Fields: fe}
	}
	if !isList {
		return []Parsed{parsePod(js, nil, o)}, nil
	}
	out := make([]Parsed, 0, len(head.Items))
	for i, item := range head.Items {
		out = append(out, parsePod(item, field.NewPath("items").Index(i), o))
	}
	return out, nil
}

func parsePod(js []byte, prefix *field.Path, o ParseOptions) Parsed {
	var pod v1.Pod
	var res Parsed
	var fe field.ErrorList
	fail := func(err error) Parsed {
		res.Err = &ManifestError{Origin: o.Origin, Fields: fe, Err: err}
		return res
	}
	if o.Strict {
		strictErrs, err := sigsjson.UnmarshalStrict(js, &pod)
		if err != nil {
			return fail(withPrefix(err, prefix))
		}
		for _, se := range strictErrs {
			var f sigsjson.FieldError
			if errors.As(se, &f) {
				detail, _, _ := strings.Cut(se.Error(), " \"")
				fe = append(fe, &field.Error{Type: field.ErrorTypeForbidden, Field: join(prefix, f.FieldPath()),
					BadValue: "", Detail: detail})
			} else {
				fe = append(fe, field.Invalid(prefix, "", se.Error()))
			}
		}
	} else if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &pod); err != nil {
		return fail(withPrefix(err, prefix))
	}
	ns := pod.Namespace
	if ns == "" {
		ns = "default"
	}
	res.Key = ns + "/" + pod.Name
	if pod.Kind != "" && pod.Kind != "Pod" && prefix != nil {
		fe = append(fe, field.NotSupported(prefix.Child("kind"), pod.Kind, []string{"Pod"}))
	}
	if pod.Name == "" {
		fe = append(fe, field.Required(prefixed(prefix, "metadata", "name"), "static pods need a name"))
	}
	if len(fe) > 0 {
		return fail(nil)
	}
	// TypeMeta is not hashed (a pod alone and in a list are the same pod)
	// nor kept in the stream (the kubelet's pods have none).
	pod.TypeMeta = metav1.TypeMeta{}
	SetAPIDefaults(&pod)
	ApplyKubeletDefaults(&pod, o.Kind, o.Origin, o.NodeName)
	for _, e := range ValidatePod(&pod) {
		e.Field = join(prefix, e.Field)
		fe = append(fe, e)
	}
	if len(fe) > 0 {
		return fail(nil)
	}
	res.Pod = &pod
	return res
}

func withPrefix(err error, prefix *field.Path) error {
	if prefix == nil {
		return err
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

func join(prefix *field.Path, p string) string {
	if prefix == nil {
		return p
	}
	return prefix.String() + "." + p
}

func prefixed(prefix *field.Path, names ...string) *field.Path {
	if prefix == nil {
		return field.NewPath(names[0], names[1:]...)
	}
	return prefix.Child(names[0], names[1:]...)
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// notAnObject explains a document that is valid YAML but no object, in
// words rather than as the Go type it failed to decode into.
func notAnObject(js []byte, err error) error {
	what := "not a mapping"
	switch t := bytes.TrimSpace(js); {
	case len(t) == 0 || bytes.Equal(t, []byte("null")):
		what = "empty"
	case t[0] == '"':
		what = "a string"
	case t[0] == '[':
		what = "a list"
	case t[0] == 't' || t[0] == 'f':
		what = "a boolean"
	case t[0] == '-' || (t[0] >= '0' && t[0] <= '9'):
		what = "a number"
	case t[0] == '{':
		// A mapping whose apiVersion, kind or items has the wrong type.
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	return fmt.Errorf("not a Kubernetes object: the document is %s, not a mapping with apiVersion and kind", what)
}
