package admission

import (
	v1 "k8s.io/api/core/v1"
)

// hostPort is one host port a pod binds: the scheduler's HostPortInfo key
// with its defaults (no IP is 0.0.0.0, no protocol TCP).
type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

// hostPorts is the scheduler's GetHostPorts: the host ports of the
// containers and of the restartable init containers (sidecars), which run
// as long as the pod.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
			if hp.ip == "" {
				hp.ip = "0.0.0.0"
			}
			if hp.protocol == "" {
				hp.protocol = v1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

func usedPorts(pods []*v1.Pod) []hostPort {
	var out []hostPort
	for _, p := range pods {
		out = append(out, hostPorts(p)...)
	}
	return out
}

// portsConflict is HostPortInfo.CheckConflict for each wanted port: the
// same protocol and port on the same IP, or on any IP when either side
// binds 0.0.0.0.
func portsConflict(want, used []hostPort) bool {
	for _, w := range want {
		for _, u := range used {
			if w.port == u.port && w.protocol == u.protocol && (w.ip == u.ip || w.ip == "0.0.0.0" || u.ip == "0.0.0.0") {
				return true
			}
		}
	}
	return false
}
