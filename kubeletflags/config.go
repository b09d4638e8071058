package kubeletflags

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// IgnoredConfigFields returns the sorted JSON paths of the fields set in kc
// ("evictionSoft", "authentication.x509.clientCAFile") that implemented does
// not cover, for the agent to log once. An implemented path covers itself
// and everything under it ("authentication" covers
// "authentication.x509.clientCAFile").
//
// The fields are found by reflection over the json tags of
// KubeletConfiguration, so a field added to k8s.io/kubelet is reported
// without a change here. Set means: a pointer, slice or map that is not nil
// (so an explicit "enableServer: false" or "featureGates: {}" counts), any
// other value that is not zero (by its IsZero method where it has one, as
// encoding/json's omitzero: a quantity "0" is zero). Structs are walked into;
// a non-nil pointer to a struct with nothing set inside is reported itself;
// types with their own JSON form (metav1.Duration) are single fields.
// apiVersion and kind are never reported.
//
// Call it on the configuration as read from the file, before defaulting
// (which would set nearly everything).
func IgnoredConfigFields(kc *kubeletconfigv1beta1.KubeletConfiguration, implemented []string) []string {
	if kc == nil {
		return nil
	}
	var out []string
	walkConfig(reflect.ValueOf(kc).Elem(), "", func(path string, v reflect.Value) {
		if !covered(path, implemented) && isSet(v) {
			out = append(out, path)
		}
	})
	sort.Strings(out)
	return out
}

// ConfigFields returns the sorted JSON paths of every field of
// KubeletConfiguration, structs ("authentication") and the fields inside
// them ("authentication.x509.clientCAFile") alike, as IgnoredConfigFields
// names them: an agent's test can check that its implemented list names
// only real fields.
func ConfigFields() []string {
	var out []string
	walkType(reflect.TypeFor[kubeletconfigv1beta1.KubeletConfiguration](), "", func(path string) { out = append(out, path) })
	sort.Strings(out)
	return out
}

func covered(path string, implemented []string) bool {
	for _, p := range implemented {
		if path == p || strings.HasPrefix(path, p+".") {
			return true
		}
	}
	return false
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	typeMeta      = reflect.TypeFor[metav1.TypeMeta]()
)

// leafStruct reports whether a struct type is one value in JSON.
func leafStruct(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || pt.Implements(jsonMarshaler) || t.Implements(textMarshaler) || pt.Implements(textMarshaler)
}

// jsonName returns the field's JSON name, whether it is inlined, and
// whether JSON sees it at all.
func jsonName(f reflect.StructField) (name string, inline, ok bool) {
	if !f.IsExported() {
		return "", false, false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" && (f.Anonymous || opts == "inline" || strings.Contains(opts, "inline")) {
		return "", true, true
	}
	if name == "" {
		name = f.Name
	}
	return name, false, true
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// walkConfig calls leaf for each field of struct v that is set, or may be:
// leaf decides with isSet.
func walkConfig(v reflect.Value, prefix string, leaf func(string, reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline, ok := jsonName(f)
		if !ok || f.Type == typeMeta {
			continue
		}
		fv := v.Field(i)
		if inline {
			if fv.Kind() == reflect.Struct {
				walkConfig(fv, prefix, leaf)
			}
			continue
		}
		path := join(prefix, name)
		switch {
		case fv.Kind() == reflect.Struct && !leafStruct(fv.Type()):
			walkConfig(fv, path, leaf)
		case fv.Kind() == reflect.Pointer && !fv.IsNil() && fv.Elem().Kind() == reflect.Struct && !leafStruct(fv.Elem().Type()):
			var inner bool
			walkConfig(fv.Elem(), path, func(p string, v reflect.Value) {
				if isSet(v) {
					inner = true
					leaf(p, v)
				}
			})
			if !inner {
				leaf(path, fv) // "tracing: {}": set, with nothing inside
			}
		default:
			leaf(path, fv)
		}
	}
}

func walkType(t reflect.Type, prefix string, leaf func(string)) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline, ok := jsonName(f)
		if !ok || f.Type == typeMeta {
			continue
		}
		ft := f.Type
		if inline {
			if ft.Kind() == reflect.Struct {
				walkType(ft, prefix, leaf)
			}
			continue
		}
		path := join(prefix, name)
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		leaf(path)
		if ft.Kind() == reflect.Struct && !leafStruct(ft) {
			walkType(ft, path, leaf)
		}
	}
}

type isZeroer interface{ IsZero() bool }

func isSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return !v.IsNil()
	}
	if z, ok := v.Interface().(isZeroer); ok {
		return !z.IsZero()
	}
	if v.CanAddr() {
		if z, ok := v.Addr().Interface().(isZeroer); ok {
			return !z.IsZero()
		}
	}
	return !v.IsZero()
}
