package kuberuntime

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
)

// The kubelet's managed /etc/hosts (pkg/kubelet/kubelet_pods.go).
const (
	etcHostsPath                      = "/etc/hosts"
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// etcHostsMount is the kubelet's makeMounts for /etc/hosts: the file
// <root-dir>/pods/<uid>/etc-hosts, written at each container start
// (ensureHostsFile) and mounted at /etc/hosts, unless the pod has no IP
// yet or the container mounts a volume there itself. A pod on the host
// network gets the node's file, others one naming the pod; both end with
// the pod's hostAliases.
func (m *Manager) etcHostsMount(pod *v1.Pod, podIPs []string, mounts []kc.Mount) (*kc.Mount, error) {
	if pod.Spec.HostNetwork && len(podIPs) == 0 && m.cfg.HostIP != "" {
		podIPs = []string{m.cfg.HostIP} // the kubelet's host IPs: the sandbox reports none
	}
	if m.cfg.RootDir == "" || len(podIPs) == 0 {
		return nil, nil
	}
	for _, mt := range mounts {
		if filepath.Clean(mt.ContainerPath) == etcHostsPath {
			return nil, nil
		}
	}
	dir, err := podpath.Layout{RootDir: m.cfg.RootDir}.PodDir(pod.UID)
	if err != nil {
		return nil, err
	}
	var content []byte
	if pod.Spec.HostNetwork {
		host, err := os.ReadFile(m.cfg.HostsFile)
		if err != nil {
			return nil, fmt.Errorf("/etc/hosts of a host-network pod: %w", err)
		}
		content = append(append([]byte(managedHostsHeaderWithHostNetwork), host...), hostAliasEntries(pod.Spec.HostAliases)...)
	} else {
		hostname, err := podHostname(pod)
		if err != nil {
			return nil, err
		}
		content = managedHosts(podIPs, hostname, m.podDomain(pod), pod.Spec.HostAliases)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("/etc/hosts: %w", err)
	}
	path := filepath.Join(dir, "etc-hosts")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return nil, fmt.Errorf("/etc/hosts: %w", err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		return nil, fmt.Errorf("/etc/hosts: %w", err)
	}
	return &kc.Mount{HostPath: path, ContainerPath: etcHostsPath}, nil
}

// podDomain is the kubelet's GeneratePodHostNameAndDomain's domain:
// <subdomain>.<namespace>.svc.<cluster domain>, when both are set; none
// with a hostnameOverride.
func (m *Manager) podDomain(pod *v1.Pod) string {
	if pod.Spec.Subdomain == "" || m.cfg.ClusterDomain == "" || pod.Spec.HostnameOverride != nil {
		return ""
	}
	return fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, m.cfg.ClusterDomain)
}

// managedHosts is the kubelet's managedHostsFileContent.
func managedHosts(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// hostAliasEntries is the kubelet's hostsEntriesFromHostAliases: one line
// per alias IP, its names tab-separated.
func hostAliasEntries(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}
