package kuberuntime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// kubelet makeMounts / ensureHostsFile: a managed /etc/hosts naming the
// pod (its FQDN with a subdomain), the node's own file for host-network
// pods, hostAliases appended to both, none for a container that mounts
// /etc/hosts itself or a pod without IPs. Upstream e2e: "KubeletManagedEtcHosts
// should test kubelet managed /etc/hosts file", "Kubelet when scheduling an
// agnhost Pod with hostAliases should write entries to /etc/hosts".
func TestEtcHostsMount(t *testing.T) {
	const header = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	aliases := []v1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}}, {IP: "127.0.0.2", Hostnames: []string{"baz"}}}
	for _, tc := range []struct {
		name   string
		spec   v1.PodSpec
		ips    []string
		mounts []kc.Mount
		want   string // "" no mount
	}{
		{"pod IP and name", v1.PodSpec{}, []string{"10.1.2.3"}, nil, header + "10.1.2.3\tweb\n"},
		{"spec.hostname, subdomain: the FQDN", v1.PodSpec{Hostname: "h", Subdomain: "sub"}, []string{"10.1.2.3", "fd00::3"}, nil,
			header + "10.1.2.3\th.sub.ns.svc.cluster.local\th\nfd00::3\th.sub.ns.svc.cluster.local\th\n"},
		{"hostnameOverride: the name whole, no domain", v1.PodSpec{Hostname: "h", Subdomain: "sub", HostnameOverride: ptr.To("override.example.com")},
			[]string{"10.1.2.3"}, nil, header + "10.1.2.3\toverride.example.com\n"},
		{"hostAliases", v1.PodSpec{HostAliases: aliases}, []string{"10.1.2.3"}, nil,
			header + "10.1.2.3\tweb\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n127.0.0.2\tbaz\n"},
		{"host network: the node's file, and the aliases", v1.PodSpec{HostNetwork: true, HostAliases: aliases}, []string{"127.0.0.1"}, nil,
			"# Kubernetes-managed hosts file (host network).\n127.0.0.1 the-node\n" +
				"\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n127.0.0.2\tbaz\n"},
		{"host network, the sandbox reporting no IP: the node's", v1.PodSpec{HostNetwork: true, HostAliases: aliases[:1]}, nil, nil,
			"# Kubernetes-managed hosts file (host network).\n127.0.0.1 the-node\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"},
		{"the container mounts /etc/hosts itself", v1.PodSpec{}, []string{"10.1.2.3"},
			[]kc.Mount{{ContainerPath: "/etc/hosts/", HostPath: "/elsewhere"}}, ""},
		{"no pod IP yet", v1.PodSpec{}, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodeHosts := filepath.Join(t.TempDir(), "hosts")
			require.NoError(t, os.WriteFile(nodeHosts, []byte("127.0.0.1 the-node\n"), 0o600))
			m, err := NewManager(ManagerConfig{Runtime: struct{ RuntimeService }{}, Images: struct{ ImageService }{},
				DNS: HostDNS("", nil, ""), PodLogsDir: t.TempDir(), RootDir: t.TempDir(), ClusterDomain: "cluster.local", HostIP: "127.0.0.1",
				HostsFile: nodeHosts})
			require.NoError(t, err)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"}, Spec: tc.spec}
			mt, err := m.etcHostsMount(pod, tc.ips, tc.mounts)
			require.NoError(t, err)
			if tc.want == "" {
				assert.Nil(t, mt)
				return
			}
			require.NotNil(t, mt)
			assert.Equal(t, "/etc/hosts", mt.ContainerPath)
			assert.Equal(t, filepath.Join(m.cfg.RootDir, "pods", "u1", "etc-hosts"), mt.HostPath)
			b, err := os.ReadFile(mt.HostPath)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(b))
			fi, err := os.Stat(mt.HostPath)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
		})
	}
}

// TestHostnameOverride: the sandbox's hostname is spec.hostnameOverride
// (GA in v1.37), checked as a DNS subdomain as the kubelet checks it.
func TestHostnameOverride(t *testing.T) {
	m, err := NewManager(ManagerConfig{Runtime: struct{ RuntimeService }{}, Images: struct{ ImageService }{},
		DNS: HostDNS("", nil, ""), PodLogsDir: t.TempDir(), RootDir: t.TempDir()})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{Hostname: "h", HostnameOverride: ptr.To("override.example.com")}}
	cfg, err := m.SandboxConfig(pod, 0, "")
	require.NoError(t, err)
	assert.Equal(t, "override.example.com", cfg.Hostname)
	pod.Spec.HostnameOverride = ptr.To("Not_A_Name")
	_, err = m.SandboxConfig(pod, 0, "")
	assert.ErrorContains(t, err, `pod HostnameOverride "Not_A_Name" is not a valid DNS subdomain`)
}
