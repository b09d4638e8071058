package kuberuntime

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Services lists the cluster's Services for the service environment
// variables (the kubelet's service lister). An error (not yet listed once)
// fails the container's start, which is retried.
type Services interface {
	ListServices() ([]*v1.Service, error)
}

// ServicesFunc adapts a function to Services.
type ServicesFunc func() ([]*v1.Service, error)

// ListServices calls f.
func (f ServicesFunc) ListServices() ([]*v1.Service, error) { return f() }

// serviceEnv is the kubelet's getServiceEnvVarMap with envvars.FromServices:
// <NAME>_SERVICE_HOST, _SERVICE_PORT, _SERVICE_PORT_<PORT NAME> and the
// Docker-link variables of the master service ("kubernetes" in default)
// and, unless enableServiceLinks is false, of every Service of the pod's
// namespace with a cluster IP.
func serviceEnv(pod *v1.Pod, services Services) (map[string]string, error) {
	if services == nil {
		return nil, nil // no API server: none, as the kubelet without one
	}
	list, err := services.ListServices()
	if err != nil {
		return nil, fmt.Errorf("services for the environment: %w", err)
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	picked := map[string]*v1.Service{}
	for _, s := range list {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == v1.ClusterIPNone || len(s.Spec.Ports) == 0 {
			continue
		}
		switch {
		case s.Namespace == "default" && s.Name == "kubernetes":
			if _, ok := picked[s.Name]; !ok {
				picked[s.Name] = s
			}
		case s.Namespace == pod.Namespace && links:
			picked[s.Name] = s
		}
	}
	env := map[string]string{}
	for _, s := range picked {
		addServiceVars(env, s)
	}
	return env, nil
}

func addServiceVars(env map[string]string, s *v1.Service) {
	prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	env[prefix+"_SERVICE_HOST"] = s.Spec.ClusterIP
	env[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for i, sp := range s.Spec.Ports {
		if sp.Name != "" {
			env[prefix+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(sp.Name, "-", "_"))] = strconv.Itoa(int(sp.Port))
		}
		proto := "TCP"
		if sp.Protocol != "" {
			proto = string(sp.Protocol)
		}
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(sp.Port)))
		if i == 0 {
			env[prefix+"_PORT"] = url // Docker's special first port
		}
		p := fmt.Sprintf("%s_PORT_%d_%s", prefix, sp.Port, strings.ToUpper(proto))
		env[p], env[p+"_PROTO"], env[p+"_PORT"], env[p+"_ADDR"] = url, strings.ToLower(proto), strconv.Itoa(int(sp.Port)), s.Spec.ClusterIP
	}
}

// withServiceEnv appends to env the service variables it does not set,
// by name, as the kubelet appends those left after the container's own.
func withServiceEnv(env []v1.EnvVar, svc map[string]string) []v1.EnvVar {
	set := make(map[string]bool, len(env))
	for _, e := range env {
		set[e.Name] = true
	}
	names := make([]string, 0, len(svc))
	for k := range svc {
		if !set[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, v1.EnvVar{Name: k, Value: svc[k]})
	}
	return env
}
