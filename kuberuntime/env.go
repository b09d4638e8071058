package kuberuntime

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodekit-dev/nodekit/fieldpath"
)

// Objects reads the ConfigMaps and Secrets that env refers to;
// *volume/apiclient.Objects implements it.
type Objects interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// containerEnv resolves a container's environment as the kubelet does:
// envFrom first, then env — literal values with $(VAR) expansion, the
// downward API (fieldRef), resourceFieldRef (an unset limit is the node's
// allocatable, when known), and with objs (an API server)
// configMapKeyRef and secretKeyRef. Without objs, references to ConfigMaps
// and Secrets are refused by name. The service variables (serviceEnv) come
// last, those the container does not set itself.
func containerEnv(pod *v1.Pod, c *v1.Container, podIPs []string, hostIP string, objs Objects, allocatable v1.ResourceList,
	services Services) ([]v1.EnvVar, error) {
	svc, err := serviceEnv(pod, services)
	if err != nil {
		return nil, err
	}
	var env []v1.EnvVar
	vars := make(map[string]string, len(c.Env)+len(svc))
	for k, v := range svc { // $(VAR) sees them; the container's own win
		vars[k] = v
	}
	if len(c.EnvFrom) > 0 {
		if objs == nil {
			return nil, fmt.Errorf("envFrom: not supported without an API server")
		}
		from, err := envFrom(pod.Namespace, c.EnvFrom, objs)
		if err != nil {
			return nil, err
		}
		for _, e := range from {
			vars[e.Name] = e.Value
		}
		env = append(env, from...)
	}
	for i, e := range c.Env {
		val := e.Value
		switch {
		case e.ValueFrom == nil:
			val = expandVars(e.Value, vars)
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldValue(pod, e.ValueFrom.FieldRef.FieldPath, podIPs, hostIP)
			if err != nil {
				return nil, fmt.Errorf("env[%d].valueFrom.fieldRef.fieldPath: %w", i, err)
			}
			val = v
		case e.ValueFrom.ResourceFieldRef != nil:
			v, err := fieldpath.ResourceValue(c, e.ValueFrom.ResourceFieldRef, allocatable)
			if err != nil {
				return nil, fmt.Errorf("env[%d].valueFrom.resourceFieldRef: %w", i, err)
			}
			val = v
		case objs == nil:
			return nil, fmt.Errorf("env[%d] (%s): configMapKeyRef and secretKeyRef need an API server", i, e.Name)
		default:
			v, ok, err := keyRef(pod.Namespace, e.ValueFrom, objs)
			if err != nil {
				return nil, fmt.Errorf("env[%d] (%s): %w", i, e.Name, err)
			}
			if !ok {
				continue // optional and missing: the variable is not set
			}
			val = v
		}
		vars[e.Name] = val
		env = setEnv(env, v1.EnvVar{Name: e.Name, Value: val})
	}
	return withServiceEnv(env, svc), nil
}

// setEnv replaces a variable envFrom set, or appends it.
func setEnv(env []v1.EnvVar, e v1.EnvVar) []v1.EnvVar {
	for i := range env {
		if env[i].Name == e.Name {
			env[i] = e
			return env
		}
	}
	return append(env, e)
}

func getCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// keyRef resolves a configMapKeyRef or secretKeyRef; ok is false for an
// optional reference whose object or key is missing.
func keyRef(ns string, src *v1.EnvVarSource, objs Objects) (string, bool, error) {
	ctx, cancel := getCtx()
	defer cancel()
	var kind, name, key string
	var optional *bool
	var data map[string]string
	var err error
	if r := src.ConfigMapKeyRef; r != nil {
		kind, name, key, optional = "ConfigMap", r.Name, r.Key, r.Optional
		var cm *v1.ConfigMap
		if cm, err = objs.GetConfigMap(ctx, ns, r.Name); err == nil {
			data = cm.Data
		}
	} else {
		r := src.SecretKeyRef
		kind, name, key, optional = "Secret", r.Name, r.Key, r.Optional
		var sec *v1.Secret
		if sec, err = objs.GetSecret(ctx, ns, r.Name); err == nil {
			data = make(map[string]string, len(sec.Data))
			for k, v := range sec.Data {
				data[k] = string(v)
			}
		}
	}
	isOptional := optional != nil && *optional
	switch {
	case apierrors.IsNotFound(err) && isOptional:
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("%s %q: %w", strings.ToLower(kind), name, err)
	}
	if v, ok := data[key]; ok {
		return v, true, nil
	}
	if isOptional {
		return "", false, nil
	}
	return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, ns, name)
}

// envFrom is every key of the referenced ConfigMaps and Secrets, prefixed,
// whatever the name: the kubelet v1.34+ copies them all (relaxed
// environment variable names, GA), the runtime passes them on.
func envFrom(ns string, sources []v1.EnvFromSource, objs Objects) ([]v1.EnvVar, error) {
	ctx, cancel := getCtx()
	defer cancel()
	var out []v1.EnvVar
	for i, s := range sources {
		data := map[string]string{}
		switch {
		case s.ConfigMapRef != nil:
			cm, err := objs.GetConfigMap(ctx, ns, s.ConfigMapRef.Name)
			if apierrors.IsNotFound(err) && s.ConfigMapRef.Optional != nil && *s.ConfigMapRef.Optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envFrom[%d].configMapRef: configmap %q: %w", i, s.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case s.SecretRef != nil:
			sec, err := objs.GetSecret(ctx, ns, s.SecretRef.Name)
			if apierrors.IsNotFound(err) && s.SecretRef.Optional != nil && *s.SecretRef.Optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envFrom[%d].secretRef: secret %q: %w", i, s.SecretRef.Name, err)
			}
			for k, v := range sec.Data {
				data[k] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = setEnv(out, v1.EnvVar{Name: s.Prefix + k, Value: data[k]})
		}
	}
	return out, nil
}

// fieldValue adds the status fields, which only the sandbox's starter
// knows, to fieldpath's.
func fieldValue(pod *v1.Pod, path string, podIPs []string, hostIP string) (string, error) {
	switch path {
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	case "status.podIP":
		if len(podIPs) > 0 {
			return podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return fieldpath.PodField(pod, path)
}

// expandVars is the kubelet's $(VAR) expansion (fieldpath.Expand) over
// vars: an undefined NAME is left as written.
func expandVars(s string, vars map[string]string) string {
	return fieldpath.Expand(s, func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return "$(" + name + ")"
	})
}
