package kubeletflags_test

import (
	"bytes"
	"flag"
	"io"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/kubeletflags"
)

func newFlagSet(t testing.TB) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func TestKubeletList(t *testing.T) {
	all := kubeletflags.Kubelet()
	// 131 on Linux: 130 flags and help (`kubelet --help | grep -c '^ *-'` of v1.37.2).
	assert.Len(t, all, 131)
	names := make([]string, len(all))
	seen := map[string]bool{}
	for i, f := range all {
		names[i] = f.Name
		assert.False(t, seen[f.Name], "duplicate %s", f.Name)
		seen[f.Name] = true
		assert.NotEmpty(t, f.Kind, f.Name)
		assert.NotContains(t, f.Name, "_", "the kubelet normalizes _ to -")
		got, ok := kubeletflags.Lookup(f.Name)
		assert.True(t, ok)
		assert.Equal(t, f, got)
	}
	assert.True(t, sort.StringsAreSorted(names))
	for _, name := range []string{"rotate-certificates", "eviction-soft", "address", "read-only-port", "tls-cert-file",
		"authorization-mode", "v", "vmodule", "kubeconfig", "bootstrap-kubeconfig", "config", "config-dir", "feature-gates",
		"node-labels", "register-with-taints", "log-flush-frequency", "logging-format",
		"log-json-split-stream", "log-text-info-buffer-size", "housekeeping-interval", "version", "help", "cloud-provider",
		"provider-id", "fail-cgroupv1", "seccomp-default", "image-credential-provider-config"} {
		assert.True(t, seen[name], "missing %s", name)
	}
	for _, name := range []string{"windows-service", "pod-max-in-unexpected-admission-error-state", "network-plugin",
		"docker-endpoint", "container-runtime", "dynamic-config-dir", "log-dir", "logtostderr", "cni-bin-dir", "h",
		// dropped in v1.35-v1.37
		"pod-infra-container-image", "containerd-namespace", "storage-driver-db", "boot-id-file", "global-housekeeping-interval"} {
		assert.False(t, seen[name], "%s is not a flag of the kubelet v1.37", name)
	}
	_, ok := kubeletflags.Lookup("foo")
	assert.False(t, ok)

	// A sample of kinds, defaults and deprecation, as the kubelet reports them.
	for _, want := range []kubeletflags.Flag{
		{Name: "address", Kind: kubeletflags.KindIP, Default: "0.0.0.0", Deprecated: true},
		{Name: "anonymous-auth", Kind: kubeletflags.KindBool, Default: "true", Deprecated: true},
		{Name: "authorization-mode", Kind: kubeletflags.KindString, Default: "AlwaysAllow", Deprecated: true},
		{Name: "read-only-port", Kind: kubeletflags.KindInt32, Default: "10255", Deprecated: true},
		{Name: "kubeconfig", Kind: kubeletflags.KindString},
		{Name: "cert-dir", Kind: kubeletflags.KindString, Default: "/var/lib/kubelet/pki"},
		{Name: "v", Kind: kubeletflags.KindLevel, Default: "0"},
		{Name: "vmodule", Kind: kubeletflags.KindVModule},
		{Name: "feature-gates", Kind: kubeletflags.KindMapStringBool, Deprecated: true},
		{Name: "kube-reserved", Kind: kubeletflags.KindQuantityMap, Deprecated: true},
		{Name: "eviction-hard", Kind: kubeletflags.KindLangleSeparatedMap, Deprecated: true},
		{Name: "enforce-node-allocatable", Kind: kubeletflags.KindStringSlice, Default: "[pods]", Deprecated: true},
		{Name: "pod-max-pids", Kind: kubeletflags.KindInt64, Default: "-1", Deprecated: true},
		{Name: "housekeeping-interval", Kind: kubeletflags.KindDuration, Default: "10s"},
		{Name: "fail-cgroupv1", Kind: kubeletflags.KindBool, Default: "true"},
		{Name: "provider-id", Kind: kubeletflags.KindString},
		{Name: "container-runtime-endpoint", Kind: kubeletflags.KindString, Default: "unix:///run/containerd/containerd.sock", Deprecated: true},
	} {
		got, _ := kubeletflags.Lookup(want.Name)
		assert.Equal(t, want, got)
	}
}

func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		kind, flag string
		good, bad  []string
	}{
		{kubeletflags.KindBool, "rotate-certificates", []string{"true", "false", "1", "0", "T", "FALSE"}, []string{"yes", "", "2"}},
		{kubeletflags.KindString, "authorization-mode", []string{"", "Webhook", "anything at all"}, nil},
		{kubeletflags.KindInt32, "read-only-port", []string{"0", "10255", "-1", "0x10", "2147483647"}, []string{"", "1.5", "ten", "2147483648", "-2147483649"}},
		{kubeletflags.KindInt64, "pod-max-pids", []string{"-1", "4096", "9223372036854775807"}, []string{"", "4k", "9223372036854775808"}},
		{kubeletflags.KindDuration, "streaming-connection-idle-timeout", []string{"0", "5m", "1h30m", "-1s", "300ms"}, []string{"", "5", "1d", "m"}},
		{kubeletflags.KindStringSlice, "tls-cipher-suites", []string{"", "TLS_AES_128_GCM_SHA256", "a,b", `"a,b",c`}, []string{`a"b`, `"a`}},
		{kubeletflags.KindIP, "address", []string{"", "0.0.0.0", "::", "10.0.0.5", "fd00::1", "010.000.000.001"}, []string{"localhost", "10.0.0", "1.2.3.4/24"}},
		{kubeletflags.KindMapStringString, "qos-reserved", []string{"", "memory=50%", "a=b,c=d", "a=", "=b", "a=b,"}, []string{"memory", "a=b,c", " "}},
		{kubeletflags.KindMapStringStringNoSplit, "cpu-manager-policy-options", []string{"full-pcpus-only=true", "a=b,c"}, []string{"", "full-pcpus-only"}},
		{kubeletflags.KindQuantityMap, "kube-reserved", []string{"", "cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000", " cpu = 1 ", "cpu=1,"},
			[]string{"cpu", "cpu=-1", "cpu=lots", "gpu=1", "memory=1Gi,nvidia.com/gpu=1"}},
		{kubeletflags.KindLangleSeparatedMap, "eviction-soft", []string{"", "memory.available<1.5Gi", "memory.available<100Mi,nodefs.available<10%"}, []string{"memory.available=1Gi", "memory.available"}},
		{kubeletflags.KindColonSeparatedMultimap, "manifest-url-header", []string{"", "a:hello,b:again", "Authorization:Bearer x"}, []string{"a=hello", "a"}},
		{kubeletflags.KindLabels, "node-labels", []string{"", "a=b", "team=infra,zone", "node.kubernetes.io/role=worker", "example.com/x=y"},
			[]string{"bad key=v", "k=bad value", "node-role.kubernetes.io/worker=", "k8s.io/x=y"}},
		{kubeletflags.KindMapStringBool, "feature-gates", []string{"", "KubeletInUserNamespace=true", "A=true,B=false", "A=1", "Anything=f"}, []string{"A", "A=yes", "A=true,B"}},
		{kubeletflags.KindTaints, "register-with-taints", []string{"", "k=v:NoSchedule", "k:NoExecute,k2=v:PreferNoSchedule", "k=v:NoSchedule,k=w:NoExecute", "k-"},
			[]string{"k", "k=v", "k=v:Bad", "k=v:NoSchedule,k=w:NoSchedule", "k=v=w:NoSchedule", "bad key:NoSchedule", "k=bad value:NoSchedule", "a:b:c"}},
		{kubeletflags.KindReservedMemory, "reserved-memory", []string{"", "0:memory=1Gi", "0:memory=1Gi,hugepages-1Mi=2Gi;1:memory=2Gi"},
			[]string{"memory=1Gi", "x:memory=1Gi", "0:cpu=1", "0:memory=x", "0:memory", "0:a:b"}},
		{kubeletflags.KindQuantity, "log-json-info-buffer-size", []string{"0", "64Ki", "1e3", "-1"}, []string{"", "64 Ki", "lots"}},
		{kubeletflags.KindLevel, "v", []string{"0", "2", "10", "2147483647"}, []string{"", "-1", "0x2", "2147483648", "high"}},
		{kubeletflags.KindVModule, "vmodule", []string{"", "foo=2", "foo*=2,bar=3", "foo=2,"}, []string{"foo", "foo=", "=2", "foo=-1", "foo=x", "a=1=2"}},
		{kubeletflags.KindVersion, "version", []string{"true", "false", "raw", "v1.34.0"}, []string{"", "yes", "vx", "v1"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			f, ok := kubeletflags.Lookup(tc.flag)
			require.True(t, ok)
			require.Equal(t, tc.kind, f.Kind)
			for _, v := range tc.good {
				fs := newFlagSet(t)
				accepted := kubeletflags.AcceptRest(fs)
				require.NoError(t, fs.Parse([]string{"--" + tc.flag + "=" + v}), "%q", v)
				assert.Equal(t, []string{tc.flag}, accepted.Set())
				assert.Equal(t, v, fs.Lookup(tc.flag).Value.String())
			}
			for _, v := range tc.bad {
				fs := newFlagSet(t)
				accepted := kubeletflags.AcceptRest(fs)
				err := fs.Parse([]string{"--" + tc.flag + "=" + v})
				require.Error(t, err, "%q", v)
				assert.Contains(t, err.Error(), "-"+tc.flag+":")
				assert.Contains(t, err.Error(), strconv.Quote(v))
				assert.Empty(t, accepted.Set())
			}
		})
	}
}

func TestEveryKindChecked(t *testing.T) {
	// Every flag accepts its own default (a list's without pflag's
	// brackets); a no-split map has none, and the kubelet refuses "" too.
	fs := newFlagSet(t)
	kubeletflags.AcceptRest(fs)
	for _, f := range kubeletflags.Kubelet() {
		if f.Name == "help" {
			continue
		}
		if f.Kind == kubeletflags.KindMapStringStringNoSplit {
			assert.Error(t, fs.Set(f.Name, ""))
			continue
		}
		def := strings.Trim(f.Default, "[]")
		assert.NoError(t, fs.Set(f.Name, def), "%s=%q", f.Name, def)
	}
}

func TestBoolFlagsStandAlone(t *testing.T) {
	fs := newFlagSet(t)
	accepted := kubeletflags.AcceptRest(fs)
	require.NoError(t, fs.Parse([]string{"--rotate-certificates", "-anonymous-auth=false", "--version", "--read-only-port", "0"}))
	assert.Equal(t, []string{"anonymous-auth", "read-only-port", "rotate-certificates", "version"}, accepted.Set())
	assert.Equal(t, "true", fs.Lookup("rotate-certificates").Value.String())
	assert.Equal(t, "false", fs.Lookup("anonymous-auth").Value.String())
	assert.Equal(t, "0", fs.Lookup("read-only-port").Value.String())
	assert.Empty(t, fs.Args())

	// As with pflag, a bool's value must be joined with "=": "false" alone is an argument.
	fs = newFlagSet(t)
	kubeletflags.AcceptRest(fs)
	require.NoError(t, fs.Parse([]string{"--rotate-certificates", "false"}))
	assert.Equal(t, []string{"false"}, fs.Args())
}

func TestKubeadmCommandLine(t *testing.T) {
	// The kubelet command line kubeadm writes (10-kubeadm.conf and
	// kubeadm-flags.env), with --node-ip, labels and taints added.
	args := strings.Fields(`--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf
		--config=/var/lib/kubelet/config.yaml --container-runtime-endpoint=unix:///var/run/containerd/containerd.sock
		--node-ip=10.0.0.5 -v=2
		--feature-gates=KubeletInUserNamespace=true --node-labels=a=b --register-with-taints=k=v:NoSchedule`)
	fs := newFlagSet(t)
	kubeconfig := fs.String("kubeconfig", "", "the agent's own")
	config := fs.String("config", "", "the agent's own")
	endpoint := fs.String("container-runtime-endpoint", "", "the agent's own")
	nodeIP := fs.String("node-ip", "", "the agent's own")
	labels := fs.String("node-labels", "", "the agent's own")
	taints := fs.String("register-with-taints", "", "the agent's own")
	accepted := kubeletflags.AcceptRest(fs)
	require.NoError(t, fs.Parse(args))
	assert.Equal(t, []string{"bootstrap-kubeconfig", "feature-gates", "v"}, accepted.Set())
	assert.Equal(t, "/etc/kubernetes/kubelet.conf", *kubeconfig)
	assert.Equal(t, "/var/lib/kubelet/config.yaml", *config)
	assert.Equal(t, "unix:///var/run/containerd/containerd.sock", *endpoint)
	assert.Equal(t, "10.0.0.5", *nodeIP)
	assert.Equal(t, "a=b", *labels)
	assert.Equal(t, "k=v:NoSchedule", *taints)
	assert.Empty(t, fs.Args())
	assert.Empty(t, kubeletflags.Extra(fs), "the agent's flags here are all the kubelet's")

	// Given twice, an accepted flag is reported once.
	fs = newFlagSet(t)
	accepted = kubeletflags.AcceptRest(fs)
	require.NoError(t, fs.Parse([]string{"-v", "2", "--v=4", "--vmodule=foo=3"}))
	assert.Equal(t, []string{"v", "vmodule"}, accepted.Set())
	assert.Equal(t, "4", fs.Lookup("v").Value.String())
}

func TestUnknownFlag(t *testing.T) {
	fs := newFlagSet(t)
	accepted := kubeletflags.AcceptRest(fs)
	err := fs.Parse([]string{"--kubeconfig=/etc/kubernetes/kubelet.conf", "--foo=bar"})
	require.EqualError(t, err, "flag provided but not defined: -foo")
	assert.Equal(t, []string{"kubeconfig"}, accepted.Set())

	// Flags the kubelet dropped before v1.37 are unknown too.
	for _, gone := range []string{"--network-plugin=cni", "--container-runtime=remote", "--logtostderr",
		"--pod-infra-container-image=pause", "--machine-id-file=/etc/machine-id"} {
		fs := newFlagSet(t)
		kubeletflags.AcceptRest(fs)
		assert.ErrorContains(t, fs.Parse([]string{gone}), "flag provided but not defined", gone)
	}
}

func TestHelp(t *testing.T) {
	// help stays flag.FlagSet's: usage, then flag.ErrHelp.
	for _, arg := range []string{"-h", "--help"} {
		fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		kubeletflags.AcceptRest(fs)
		assert.ErrorIs(t, fs.Parse([]string{arg}), flag.ErrHelp)
		assert.Contains(t, out.String(), "-rotate-certificates\n")
		assert.Contains(t, out.String(), "accepted for compatibility with the kubelet v1.37.2, without effect (bool); deprecated in the kubelet")
		assert.Contains(t, out.String(), "  -read-only-port int32\n")
		assert.Contains(t, out.String(), "  -vmodule pattern=N,...\n")
		assert.Contains(t, out.String(), "(default /var/lib/kubelet/pki)")
		assert.NotContains(t, out.String(), "(default [])")
		assert.Contains(t, out.String(), "(default [pods])")
		assert.Nil(t, fs.Lookup("help"))
	}
}

func TestAcceptRestKeepsDefinedFlags(t *testing.T) {
	fs := newFlagSet(t)
	port := fs.Int("port", 10250, "the agent's own")
	runtime := fs.String("runtime", "auto", "an agent extra")
	accepted := kubeletflags.AcceptRest(fs)
	assert.Equal(t, "the agent's own", fs.Lookup("port").Usage)
	require.NoError(t, fs.Parse([]string{"--port=0", "--runtime=fake", "--read-only-port=0"}))
	assert.Equal(t, 0, *port)
	assert.Equal(t, "fake", *runtime)
	assert.Equal(t, []string{"read-only-port"}, accepted.Set())

	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	assert.Equal(t, 131, n, "129 accepted (not help, not port), port and runtime")
}

func TestExtra(t *testing.T) {
	fs := newFlagSet(t)
	fs.String("kubeconfig", "", "")
	fs.String("runtime", "auto", "")
	fs.Duration("relist-period", 0, "")
	fs.Int("node-lease-duration-seconds", 40, "config-file only in the kubelet")
	fs.Bool("h", false, "")
	fs.Bool("help", false, "")
	assert.Equal(t, []string{"node-lease-duration-seconds", "relist-period", "runtime"}, kubeletflags.Extra(fs))
	kubeletflags.AcceptRest(fs)
	assert.Equal(t, []string{"node-lease-duration-seconds", "relist-period", "runtime"}, kubeletflags.Extra(fs))
	assert.Empty(t, kubeletflags.Extra(newFlagSet(t)))
}

func TestNormalizeArgs(t *testing.T) {
	fs := newFlagSet(t)
	fs.String("node-labels", "", "")
	accepted := kubeletflags.AcceptRest(fs)
	args := []string{"--housekeeping_interval=5s", "--node_labels", "a_b=c_d", "-rotate_certificates", "--cert_dir", "--x_y", "--", "--foo_bar"}
	got := kubeletflags.NormalizeArgs(fs, args)
	assert.Equal(t, []string{"--housekeeping-interval=5s", "--node-labels", "a_b=c_d", "-rotate-certificates", "--cert-dir", "--x_y", "--", "--foo_bar"}, got)
	assert.Equal(t, "--housekeeping_interval=5s", args[0], "args are not changed")
	require.NoError(t, fs.Parse(got))
	assert.Equal(t, "a_b=c_d", fs.Lookup("node-labels").Value.String())
	assert.Equal(t, []string{"cert-dir", "housekeeping-interval", "rotate-certificates"}, accepted.Set())
	assert.Equal(t, []string{"--foo_bar"}, fs.Args())

	assert.Equal(t, []string{"run", "--a_b"}, kubeletflags.NormalizeArgs(fs, []string{"run", "--a_b"}), "stops at the first argument")
	assert.Equal(t, []string{"---a_b"}, kubeletflags.NormalizeArgs(fs, []string{"---a_b"}), "bad syntax left to Parse")
	assert.Empty(t, kubeletflags.NormalizeArgs(fs, nil))
}
