package kuberuntime

import (
	"os"
	"path/filepath"
	"testing"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func newTestManager(t *testing.T) *Manager {
	m, err := NewManager(ManagerConfig{Runtime: struct{ RuntimeService }{}, Images: struct{ ImageService }{},
		DNS: HostDNS("", nil, ""), PodLogsDir: t.TempDir(), HostIP: "127.0.0.1"})
	require.NoError(t, err)
	return m
}

func webPod() *v1.Pod {
	grace := int64(5)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"}},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name: "srv", Image: "nodekit.local/testbin:1", Args: []string{"serve", "$(PORT)"},
				Ports: []v1.ContainerPort{{ContainerPort: 8080, HostPort: 18080}},
				Env: []v1.EnvVar{
					{Name: "PORT", Value: "8080"},
					{Name: "ADDR", Value: "127.0.0.1:$(PORT)"},
					{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
					{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{
						Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
}

func TestSandboxConfig(t *testing.T) {
	m := newTestManager(t)
	pod := webPod()
	cfg, err := m.SandboxConfig(pod, 2, "/kubepods/burstable/podu1")
	require.NoError(t, err)
	assert.Equal(t, &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1", Attempt: 2}, cfg.Metadata)
	assert.Equal(t, map[string]string{"app": "web", kc.LabelPodName: "web", kc.LabelPodNamespace: "default", kc.LabelPodUID: "u1"}, cfg.Labels)
	assert.Equal(t, "web", cfg.Hostname)
	assert.Equal(t, m.cfg.PodLogsDir+"/default_web_u1", cfg.LogDirectory)
	assert.Equal(t, "/kubepods/burstable/podu1", cfg.Linux.CgroupParent)
	assert.Equal(t, runtimeapi.NamespaceMode_POD, cfg.Linux.SecurityContext.NamespaceOptions.Network)
	require.Len(t, cfg.PortMappings, 1)
	assert.Equal(t, int32(18080), cfg.PortMappings[0].HostPort)

	pod.Spec.HostNetwork = true
	pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: 70000})
	cfg, err = m.SandboxConfig(pod, 0, "")
	require.NoError(t, err)
	assert.Empty(t, cfg.Hostname, "no hostname on the host network")
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, cfg.Linux.SecurityContext.NamespaceOptions.Network)
	assert.Len(t, cfg.PortMappings, 1, "invalid port left out of the sandbox")

	m.cfg.SandboxLabels = map[string]string{"nodekit.dev/node": "n1", kc.LabelPodUID: "not-this"}
	cfg, err = m.SandboxConfig(pod, 0, "")
	require.NoError(t, err)
	assert.Equal(t, "n1", cfg.Labels["nodekit.dev/node"], "extra sandbox labels")
	assert.Equal(t, "u1", cfg.Labels[kc.LabelPodUID], "the kubelet's labels win")
}

func TestContainerConfig(t *testing.T) {
	m := newTestManager(t)
	pod := webPod()
	cfg, err := m.ContainerConfig(pod, &pod.Spec.Containers[0], ContainerInput{RestartCount: 3, ImageRef: "sha256:abc", PodIPs: []string{"127.1.0.9"}})
	require.NoError(t, err)
	assert.Equal(t, uint32(3), cfg.Metadata.Attempt)
	assert.Equal(t, "sha256:abc", cfg.Image.Image)
	assert.Equal(t, []string{"serve", "8080"}, cfg.Args)
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	assert.Equal(t, map[string]string{"PORT": "8080", "ADDR": "127.0.0.1:8080", "POD": "web", "APP": "web", "IP": "127.1.0.9", "MEM": "64"}, env)
	assert.Equal(t, "srv/3.log", cfg.LogPath)
	assert.Equal(t, "3", cfg.Annotations[kc.AnnotationRestartCount])
	assert.Equal(t, "5", cfg.Annotations[kc.AnnotationPodTerminationGrace])
	assert.Equal(t, "srv", cfg.Labels[kc.LabelContainerName])
	r := cfg.Linux.Resources
	assert.Equal(t, int64(102), r.CpuShares)
	assert.Equal(t, int64(50000), r.CpuQuota)
	assert.Equal(t, int64(64<<20), r.MemoryLimitInBytes)
	assert.NotEmpty(t, cfg.Linux.SecurityContext.MaskedPaths)

	li := kc.ReadLabels(cfg.Labels, cfg.Annotations)
	assert.Equal(t, kc.HashContainer(&pod.Spec.Containers[0]), li.Hash)
	assert.Equal(t, 3, li.RestartCount)
	assert.Equal(t, int64(5), *li.GracePeriod)
}

func TestContainerConfigErrorsNameTheField(t *testing.T) {
	m := newTestManager(t)
	for _, tc := range []struct {
		name  string
		patch func(c *v1.Container)
		want  string
	}{
		{"bad port", func(c *v1.Container) { c.Ports[0].ContainerPort = 70000 }, "container srv: ports[0].containerPort: Invalid value: 70000"},
		{"bad host port", func(c *v1.Container) { c.Ports[0].HostPort = -1 }, "container srv: ports[0].hostPort: Invalid value: -1"},
		{"no image", func(c *v1.Container) { c.Image = "" }, "container srv: image: Required value"},
		{"bad name", func(c *v1.Container) { c.Name = "Srv_1" }, `container "Srv_1": name: Invalid value`},
		{"secret env", func(c *v1.Container) {
			c.Env = append(c.Env, v1.EnvVar{Name: "S", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}})
		}, "container srv: env[6] (S): configMapKeyRef and secretKeyRef need an API server"},
		{"bad fieldRef", func(c *v1.Container) {
			c.Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}
		}, `container srv: env[0].valueFrom.fieldRef.fieldPath: unsupported value "spec.bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := webPod()
			tc.patch(&pod.Spec.Containers[0])
			_, err := m.ContainerConfig(pod, &pod.Spec.Containers[0], ContainerInput{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestHostDNS(t *testing.T) {
	rc := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(rc, []byte("# c\nnameserver 127.0.0.53\nsearch a.example b.example\noptions edns0 trust-ad\n"), 0o644))
	ndots := "2"
	for _, tc := range []struct {
		name       string
		pod        v1.PodSpec
		clusterDNS []string
		want       *runtimeapi.DNSConfig
	}{
		{"default policy, standalone: host", v1.PodSpec{}, nil,
			&runtimeapi.DNSConfig{Servers: []string{"127.0.0.53"}, Searches: []string{"a.example", "b.example"}, Options: []string{"edns0", "trust-ad"}}},
		{"cluster first with cluster DNS", v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}, []string{"127.0.0.10"},
			&runtimeapi.DNSConfig{Servers: []string{"127.0.0.10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}}},
		{"host network cluster first falls back to host", v1.PodSpec{HostNetwork: true}, []string{"127.0.0.10"},
			&runtimeapi.DNSConfig{Servers: []string{"127.0.0.53"}, Searches: []string{"a.example", "b.example"}, Options: []string{"edns0", "trust-ad"}}},
		{"None uses only dnsConfig", v1.PodSpec{DNSPolicy: v1.DNSNone, DNSConfig: &v1.PodDNSConfig{Nameservers: []string{"127.0.0.2"},
			Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}, {Name: "rotate"}}}}, nil,
			&runtimeapi.DNSConfig{Servers: []string{"127.0.0.2"}, Options: []string{"ndots:2", "rotate"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: tc.pod}
			got, err := HostDNS(rc, tc.clusterDNS, "cluster.local")(pod)
			require.NoError(t, err)
			assert.Equal(t, tc.want.Servers, got.Servers)
			assert.Equal(t, tc.want.Searches, got.Searches)
			assert.Equal(t, tc.want.Options, got.Options)
		})
	}
}

// A limit the container does not set reads, through the downward API, as
// the node's allocatable.
func TestContainerConfigEnvDefaultsToNodeAllocatable(t *testing.T) {
	m := newTestManager(t)
	pod := webPod()
	delete(pod.Spec.Containers[0].Resources.Limits, v1.ResourceMemory)
	cfg, err := m.ContainerConfig(pod, &pod.Spec.Containers[0], ContainerInput{})
	require.NoError(t, err)
	assert.Contains(t, cfg.Envs, &runtimeapi.KeyValue{Key: "MEM", Value: []byte("0")}, "no allocatable known")

	m.cfg.NodeAllocatable = func() v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")} }
	cfg, err = m.ContainerConfig(pod, &pod.Spec.Containers[0], ContainerInput{})
	require.NoError(t, err)
	assert.Contains(t, cfg.Envs, &runtimeapi.KeyValue{Key: "MEM", Value: []byte("2048")})
}

// The API server's validation (validateInitContainers, validateContainers)
// with container restart rules (beta, on since v1.35): restartPolicy
// Always makes an init container a sidecar, without rules; any container
// may have Always, OnFailure or Never, with rules.
func TestContainerConfigRestartPolicy(t *testing.T) {
	m := newTestManager(t)
	always, never, bogus := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicy("Sometimes")
	restartOn42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	noCodes := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}
	badOp := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: "Maybe"}}}
	for _, tc := range []struct {
		name    string
		init    bool
		policy  *v1.ContainerRestartPolicy
		rules   []v1.ContainerRestartRule
		wantErr string
	}{
		{"sidecar: init container with restartPolicy Always", true, &always, nil, ""},
		{"init container without restartPolicy", true, nil, nil, ""},
		{"init container with restartPolicy Never and rules", true, &never, restartOn42, ""},
		{"sidecar with rules", true, &always, restartOn42, `init container srv: restartPolicyRules: Forbidden: restartPolicyRules are not allowed for init containers with restart policy Always`},
		{"regular container with restartPolicy Always", false, &always, nil, ""},
		{"regular container with restartPolicy Never and rules", false, &never, restartOn42, ""},
		{"rules without restartPolicy", false, nil, restartOn42, `container srv: restartPolicy: Required value: must specify restartPolicy when restart rules are used`},
		{"unknown restartPolicy", false, &bogus, nil, `container srv: restartPolicy: Unsupported value: "Sometimes"`},
		{"rule without exit codes", false, &never, noCodes, `container srv: restartPolicyRules[0].exitCodes: Required value`},
		{"rule with an unknown operator", false, &never, badOp, `container srv: restartPolicyRules[0].exitCodes.operator: Unsupported value: "Maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := webPod()
			c := pod.Spec.Containers[0].DeepCopy()
			c.RestartPolicy, c.RestartPolicyRules = tc.policy, tc.rules
			if tc.init {
				pod.Spec.InitContainers = []v1.Container{*c}
				c = &pod.Spec.InitContainers[0]
				pod.Spec.Containers[0].Name = "main"
			} else {
				pod.Spec.Containers[0] = *c
			}
			_, err := m.ContainerConfig(pod, c, ContainerInput{})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// An ephemeral container's config: the API server's validateEphemeralContainers
// forbids ports, probes, lifecycle and restartPolicy; the kubelet's
// generateLinuxContainerConfig gives a targeted one its target's process
// namespace (Pid TARGET) only when the pod's mode is CONTAINER.
func TestContainerConfigEphemeralContainer(t *testing.T) {
	m := newTestManager(t)
	always := v1.ContainerRestartPolicyAlways
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	yes := true
	for _, tc := range []struct {
		name     string
		edit     func(pod *v1.Pod, c *v1.EphemeralContainerCommon)
		target   string
		wantPid  runtimeapi.NamespaceMode
		wantErr  string
		wantTgID string
	}{
		{name: "validateEphemeralContainers: a plain ephemeral container is accepted",
			edit: func(*v1.Pod, *v1.EphemeralContainerCommon) {}, wantPid: runtimeapi.NamespaceMode_CONTAINER},
		{name: "generateLinuxContainerConfig: a target turns Pid CONTAINER into TARGET",
			edit: func(*v1.Pod, *v1.EphemeralContainerCommon) {}, target: "cid-web",
			wantPid: runtimeapi.NamespaceMode_TARGET, wantTgID: "cid-web"},
		{name: "generateLinuxContainerConfig: shareProcessNamespace keeps Pid POD",
			edit: func(p *v1.Pod, _ *v1.EphemeralContainerCommon) { p.Spec.ShareProcessNamespace = &yes }, target: "cid-web",
			wantPid: runtimeapi.NamespaceMode_POD},
		{name: "generateLinuxContainerConfig: hostPID keeps Pid NODE",
			edit: func(p *v1.Pod, _ *v1.EphemeralContainerCommon) { p.Spec.HostPID = true }, target: "cid-web",
			wantPid: runtimeapi.NamespaceMode_NODE},
		{name: "validateEphemeralContainers: ports are forbidden",
			edit:    func(_ *v1.Pod, c *v1.EphemeralContainerCommon) { c.Ports = []v1.ContainerPort{{ContainerPort: 80}} },
			wantErr: "ephemeral container debug: ports: Forbidden: cannot be set for an Ephemeral Container"},
		{name: "validateEphemeralContainers: probes are forbidden",
			edit:    func(_ *v1.Pod, c *v1.EphemeralContainerCommon) { c.ReadinessProbe = probe },
			wantErr: "ephemeral container debug: readinessProbe: Forbidden"},
		{name: "validateEphemeralContainers: lifecycle is forbidden",
			edit:    func(_ *v1.Pod, c *v1.EphemeralContainerCommon) { c.Lifecycle = &v1.Lifecycle{} },
			wantErr: "ephemeral container debug: lifecycle: Forbidden"},
		{name: "validateEphemeralContainers: restartPolicy is forbidden",
			edit:    func(_ *v1.Pod, c *v1.EphemeralContainerCommon) { c.RestartPolicy = &always },
			wantErr: `ephemeral container debug: restartPolicy: Forbidden: cannot be set for an Ephemeral Container (value "Always")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := webPod()
			pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{TargetContainerName: pod.Spec.Containers[0].Name,
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			ec := &pod.Spec.EphemeralContainers[0].EphemeralContainerCommon
			tc.edit(pod, ec)
			cfg, err := m.ContainerConfig(pod, (*v1.Container)(ec), ContainerInput{TargetID: tc.target})
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			ns := cfg.Linux.SecurityContext.NamespaceOptions
			assert.Equal(t, tc.wantPid, ns.Pid)
			assert.Equal(t, tc.wantTgID, ns.TargetId)
		})
	}
}
