package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/kubeletflags"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/server/serverauth"
	nodeserving "github.com/nodekit-dev/nodekit/server/serving"
)

// TestMain checks no goroutine outlives the tests, but for spdystream's
// shutdown after a streaming connection's Close: it offers the close
// error to nobody for up to a second (its own timer) before it ends, and
// goleak's retries do not always wait that long (a flake seen here).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}

// TestVersionFlag: --version prints before the rest is read (a broken
// config file does not stop it), --version=vX.Y.Z is the node's
// kubeletVersion.
func TestVersionFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"--config", filepath.Join(t.TempDir(), "missing.yaml"), "--version"})
	require.NoError(t, err)
	assert.Equal(t, "Kubernetes v1.37.2+nodekit\n", cfg.version.Text())

	cfg, err = parseFlags([]string{"--version=v1.37.2-custom.1"})
	require.NoError(t, err)
	assert.Empty(t, cfg.version.Text())
	nc, err := cfg.nodeAgentConfig()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2-custom.1", nc.KubeletVersion)
	assert.Empty(t, cfg.ignoredFlags, "--version is the agent's own, not accepted without effect")
}

func TestParseFlagsRejectsBadInput(t *testing.T) {
	for args, want := range map[string][]string{
		"--runtime: invalid value \"docker\"":                                   {"--runtime", "docker"},
		"--container-runtime-endpoint: endpoint \"tcp://x\": only unix sockets": {"--container-runtime-endpoint", "tcp://x"},
		"flag provided but not defined: -bogus":                                 {"--bogus"},
		"--relist-period: invalid value 0s":                                     {"--relist-period", "0s"},
		"--max-pods: invalid value 0: must be between 1 and 1048576":            {"--max-pods", "0"},
		`--kube-reserved: Invalid value: "gpu=1"`:                               {"--kube-reserved", "gpu=1"},
		`--eviction-hard: Invalid value: "memory.available=1Gi"`:                {"--eviction-hard", "memory.available=1Gi"},
		`--register-with-taints: Invalid value: "a=b"`:                          {"--register-with-taints", "a=b"},
		`--authorization-mode: Unsupported value: "RBAC"`:                       {"--authorization-mode", "RBAC"},
		`--address: Invalid value: "localhost": must be an IP address`:          {"--address", "localhost"},
		"--read-only-port: invalid value 70000":                                 {"--read-only-port", "70000"},
		"-v: invalid value 11":                                                  {"-v", "11"},
		"--eviction-soft-grace-period: Required value":                          {"--eviction-soft", "memory.available<1Gi"},
		`--eviction-minimum-reclaim: Invalid value: "memory.available"`:         {"--eviction-minimum-reclaim", "memory.available"},
		"--eviction-pressure-transition-period: invalid value -1s":              {"--eviction-pressure-transition-period", "-1s"},
		`must match major/minor/patch of default version "v1.37.2+nodekit"`:     {"--version=v1.38.0"},
	} {
		_, err := parseFlags(want)
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), args)
	}
	cfgFile := filepath.Join(t.TempDir(), "kubelet.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+
		"staticPodPath: /srv/manifests\nsyncFrequency: 30s\nmaxPods: 20\nhealthzPort: 11248\ncgroupDriver: systemd\n"+
		"kubeReserved: {cpu: 100m, memory: 1Gi}\nevictionHard: {memory.available: 200Mi}\n"), 0o644))
	cfg, err := parseFlags([]string{"--config", cfgFile, "--sync-frequency", "5s"})
	require.NoError(t, err)
	assert.Equal(t, "/srv/manifests", cfg.manifestPath, "from the file")
	assert.Equal(t, 5*time.Second, cfg.syncFrequency, "the flag wins")
	assert.Equal(t, 20, cfg.maxPods)
	assert.Equal(t, 11248, cfg.serving.HealthzPort)
	assert.Equal(t, "cpu=100m,memory=1Gi", cfg.kubeReserved, "maps from the file in the flags' form")
	require.NotNil(t, cfg.eviction.flags.Hard)
	assert.Equal(t, "memory.available<200Mi", *cfg.eviction.flags.Hard)
	assert.Equal(t, "systemd", cfg.cgroupDriver)
	// kubelet DecodeKubeletConfiguration: a misspelt field is decoded
	// leniently, the strict error logged; YAML that does not parse fails.
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+
		"staticPodPaht: /x\nmaxPods: 30\n"), 0o644))
	cfg, err = parseFlags([]string{"--config", cfgFile})
	require.NoError(t, err)
	require.Error(t, cfg.loaded.Lenient)
	assert.Contains(t, cfg.loaded.Lenient.Error(), `unknown field "staticPodPaht"`)
	assert.Equal(t, 30, cfg.maxPods, "the rest of the file applies")
	// --config-dir: drop-ins over the file, flags over both.
	dropIns := filepath.Join(t.TempDir(), "kubelet.conf.d")
	require.NoError(t, os.Mkdir(dropIns, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dropIns, "10-pods.conf"), []byte("apiVersion: kubelet.config.k8s.io/v1beta1\n"+
		"kind: KubeletConfiguration\nmaxPods: 40\nsyncFrequency: 20s\nhealthzPort: 12248\nfailCgroupV1: false\nenableControllerAttachDetach: false\n"), 0o644))
	assert.True(t, cfg.failCgroupV1, "the kubelet's default since v1.35")
	cfg, err = parseFlags([]string{"--config", cfgFile, "--config-dir", dropIns, "--sync-frequency", "5s"})
	require.NoError(t, err)
	assert.Equal(t, 40, cfg.maxPods, "the drop-in over the file")
	assert.Equal(t, 5*time.Second, cfg.syncFrequency, "the flag over the drop-in")
	assert.Equal(t, 12248, cfg.serving.HealthzPort)
	assert.False(t, cfg.failCgroupV1)
	nc, err := cfg.nodeAgentConfig()
	require.NoError(t, err)
	assert.Equal(t, ptr.To(false), nc.FailCgroupV1)
	assert.Equal(t, ptr.To(false), nc.ControllerManagedAttachDetach)
	cfg, err = parseFlags([]string{"--config-dir", dropIns})
	require.NoError(t, err)
	assert.Equal(t, 40, cfg.maxPods, "a drop-in directory without --config")
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: [\n"), 0o644))
	_, err = parseFlags([]string{"--config", cfgFile})
	assert.ErrorContains(t, err, "--config "+cfgFile)
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: v1\nkind: Pod\n"), 0o644))
	_, err = parseFlags([]string{"--config", cfgFile})
	assert.ErrorContains(t, err, "apiVersion/kind: Unsupported value")

	// Serving: the v1beta1 defaults (with an API server; without, see
	// TestStandaloneServingDefaults), the file's settings (relative paths
	// are the file's), flags winning.
	cfg, err = parseFlags([]string{"--root-dir", "/srv/kubelet", "--kubeconfig", "/etc/kubernetes/kubelet.conf"})
	require.NoError(t, err)
	assert.Equal(t, nodeserving.Settings{Address: "0.0.0.0", HealthzAddress: "127.0.0.1", Port: 10250, HealthzPort: 10248,
		TLS: serverauth.TLSOptions{CertDir: "/srv/kubelet/pki"},
		Authentication: kubeletconfig.KubeletAuthentication{Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
			Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(true), CacheTTL: metav1.Duration{Duration: 2 * time.Minute}}},
		Authorization: kubeletconfig.KubeletAuthorization{Mode: "Webhook", Webhook: kubeletconfig.KubeletWebhookAuthorization{
			CacheAuthorizedTTL: metav1.Duration{Duration: 5 * time.Minute}, CacheUnauthorizedTTL: metav1.Duration{Duration: 30 * time.Second}}},
	}, cfg.serving)
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+
		"address: 127.0.0.1\nreadOnlyPort: 10255\ntlsCertFile: pki/serving.crt\ntlsPrivateKeyFile: /etc/serving.key\n"+
		"tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\npodLogsDir: logs\n"+
		"authentication: {anonymous: {enabled: true}, webhook: {enabled: false}, x509: {clientCAFile: ca.crt}}\n"+
		"authorization: {mode: AlwaysAllow}\n"), 0o644))
	cfg, err = parseFlags([]string{"--config", cfgFile, "--anonymous-auth=false"})
	require.NoError(t, err)
	base := filepath.Dir(cfgFile)
	assert.Equal(t, "127.0.0.1", cfg.serving.Address)
	assert.Equal(t, 10255, cfg.serving.ReadOnlyPort)
	assert.Equal(t, filepath.Join(base, "pki/serving.crt"), cfg.serving.TLS.CertFile)
	assert.Equal(t, "/etc/serving.key", cfg.serving.TLS.KeyFile)
	assert.Equal(t, []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, cfg.serving.TLS.CipherSuites)
	assert.Equal(t, filepath.Join(base, "logs"), cfg.podLogsDir)
	assert.Equal(t, filepath.Join(base, "ca.crt"), cfg.serving.Authentication.X509.ClientCAFile)
	assert.False(t, *cfg.serving.Authentication.Anonymous.Enabled, "the flag wins")
	assert.False(t, *cfg.serving.Authentication.Webhook.Enabled)
	assert.Equal(t, kubeletconfig.KubeletAuthorizationModeAlwaysAllow, cfg.serving.Authorization.Mode)

	cfg, err = parseFlags([]string{"--hostname-override", "Node-A"})
	require.NoError(t, err)
	assert.Equal(t, "node-a", cfg.hostname)
	assert.Equal(t, "/etc/kubernetes/manifests", cfg.manifestPath)
	assert.Equal(t, runtime.DefaultRuntimeEndpoint, cfg.endpoint)
}

// startAgent connects to cfg's runtime and runs the agent in the
// background; stop ends it. The runtime connection closes when the test
// ends, so deferred clean-ups can still use the agent's runtime manager.
func startAgent(t *testing.T, ctx context.Context, cfg config) (a *agent, stop func()) {
	t.Helper()
	client, closeRuntime, err := connect(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(closeRuntime)
	a, _, err = newAgent(ctx, cfg, logr.Discard(), client)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.run(runCtx); close(done) }()
	return a, func() { cancel(); <-done }
}

// podNamed returns the agent's pod with this name and its status, or nil.
func podNamed(a *agent, name string) *v1.Pod {
	for _, p := range a.Pods() {
		if p.Name == name {
			return &p
		}
	}
	return nil
}

// A kubeadm node's kubelet command line and config file work unchanged:
// what the agent implements takes effect, the rest is accepted and listed
// once; a bad value of an accepted flag and a flag the kubelet lacks fail.
func TestAKubeletCommandLineWorksUnchanged(t *testing.T) {
	fs := newFlagSet(&config{}, &rawFlags{})
	assert.Equal(t, agentExtras, kubeletflags.Extra(fs), "the agent's only flags the kubelet does not have")
	fields := map[string]bool{}
	for _, f := range kubeletflags.ConfigFields() {
		fields[f] = true
	}
	for _, f := range implementedFields {
		assert.True(t, fields[f], "implementedFields names a KubeletConfiguration field: %s", f)
	}

	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+
		"authentication: {x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}}\nrotateCertificates: true\n"+
		"serializeImagePulls: false\nstaticPodPath: /etc/kubernetes/manifests\nclusterDNS: [10.96.0.10]\n"), 0o644))
	cfg, err := parseFlags([]string{"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
		"--config=" + cfgFile, "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
		"--pod-infra-container-image=registry.k8s.io/pause:3.10", "--node-ip=10.0.0.5", "--v=2",
		"--feature-gates=KubeletInUserNamespace=true", "--node-labels=a=b", "--register-with-taints=k=v:NoSchedule"})
	require.NoError(t, err)
	assert.Equal(t, []string{"bootstrap-kubeconfig", "feature-gates"}, cfg.ignoredFlags)
	assert.Equal(t, []string{"clusterDNS", "rotateCertificates", "serializeImagePulls"}, cfg.ignoredFields)
	assert.Equal(t, "10.0.0.5", cfg.hostIP)
	assert.Equal(t, 2, cfg.verbosity)
	assert.Equal(t, "/etc/kubernetes/pki/ca.crt", cfg.serving.Authentication.X509.ClientCAFile)

	cfgFile = filepath.Join(t.TempDir(), "sysctls.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+
		"allowedUnsafeSysctls: [kernel.msg*]\n"), 0o644))
	cfg, err = parseFlags([]string{"--config=" + cfgFile})
	require.NoError(t, err)
	assert.Equal(t, []string{"kernel.msg*"}, cfg.allowedUnsafeSysctls, "the config file's")
	cfg, err = parseFlags([]string{"--config=" + cfgFile, "--allowed-unsafe-sysctls=net.core.somaxconn,kernel.shmmax"})
	require.NoError(t, err)
	assert.Equal(t, []string{"net.core.somaxconn", "kernel.shmmax"}, cfg.allowedUnsafeSysctls, "the flag wins")

	_, err = parseFlags([]string{"--rotate-certificates=maybe"})
	assert.ErrorContains(t, err, `invalid boolean value "maybe" for -rotate-certificates`)
	_, err = parseFlags([]string{"--housekeeping_interval=10s"})
	assert.NoError(t, err, "underscores are the kubelet's dashes")
	_, err = parseFlags([]string{"--not-a-kubelet-flag"})
	assert.ErrorContains(t, err, "flag provided but not defined: -not-a-kubelet-flag")
}

// TestEvictionSettings: the kubelet's defaults, its replace-not-merge rule
// for --eviction-hard, and the config file's fields under the flags.
func TestEvictionSettings(t *testing.T) {
	signals := func(ts []eviction.Threshold) []string {
		var out []string
		for _, th := range ts {
			out = append(out, th.String())
		}
		return out
	}
	cfg, err := parseFlags(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%",
		"imagefs.inodesFree<5%", "allocatableMemory.available<100Mi"}, signals(cfg.eviction.thresholds))
	assert.Equal(t, 5*time.Minute, cfg.eviction.transition)

	cfg, err = parseFlags([]string{"--eviction-hard=nodefs.available<1Gi"})
	require.NoError(t, err)
	assert.Equal(t, []string{"nodefs.available<1Gi"}, signals(cfg.eviction.thresholds), "set, it replaces the default")

	cfgFile := filepath.Join(t.TempDir(), "kubelet.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+
		"evictionHard: {nodefs.available: 20%}\nmergeDefaultEvictionSettings: true\n"+
		"evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: 1m30s}\n"+
		"evictionMinimumReclaim: {nodefs.available: 500Mi}\nevictionMaxPodGracePeriod: 60\n"+
		"evictionPressureTransitionPeriod: 30s\nlocalStorageCapacityIsolation: false\n"), 0o644))
	cfg, err = parseFlags([]string{"--config", cfgFile, "--eviction-max-pod-grace-period=10"})
	require.NoError(t, err)
	assert.Equal(t, []string{"nodefs.available<20% (minimum reclaim 500Mi)", "memory.available<100Mi", "nodefs.inodesFree<5%",
		"imagefs.available<15%", "imagefs.inodesFree<5%", "memory.available<1Gi (grace period 1m30s)",
		"allocatableMemory.available<100Mi"}, signals(cfg.eviction.thresholds))
	assert.Equal(t, 10, cfg.eviction.maxPodGrace, "the flag wins")
	assert.Equal(t, 30*time.Second, cfg.eviction.transition)
	assert.Equal(t, ptr.To(false), cfg.eviction.localStorage)
	assert.Empty(t, cfg.ignoredFields)
}
