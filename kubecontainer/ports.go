package kubecontainer

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolvePort turns a probe's or hook's port — a number, or the name of one
// of the container's ports — into a number.
func ResolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	if c == nil {
		return 0, fmt.Errorf("port %q: no container port with that name", p.StrVal)
	}
	return 0, fmt.Errorf("port %q: no container port with that name in container %s", p.StrVal, c.Name)
}

// TrimRuntimeType turns an API container ID ("containerd://abc") into the
// runtime's ID ("abc"); an ID without a type is returned as is.
func TrimRuntimeType(containerID string) string {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		return id
	}
	return containerID
}
