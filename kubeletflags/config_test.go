package kubeletflags_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekit-dev/nodekit/kubeletflags"
)

// The KubeletConfiguration kubeadm v1.34 writes to /var/lib/kubelet/config.yaml.
const kubeadmConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`

func TestIgnoredConfigFields(t *testing.T) {
	var kubeadm kubeletconfigv1beta1.KubeletConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(kubeadmConfig), &kubeadm))

	for _, tc := range []struct {
		name        string
		kc          *kubeletconfigv1beta1.KubeletConfiguration
		implemented []string
		want        []string
	}{
		{name: "nil", kc: nil, want: nil},
		{name: "empty", kc: &kubeletconfigv1beta1.KubeletConfiguration{}, want: nil},
		{name: "apiVersion and kind", kc: &kubeletconfigv1beta1.KubeletConfiguration{
			TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"}}, want: nil},
		{
			name: "a few fields",
			kc: &kubeletconfigv1beta1.KubeletConfiguration{
				StaticPodPath:  "/etc/kubernetes/manifests",
				SyncFrequency:  metav1.Duration{Duration: time.Minute},
				EvictionSoft:   map[string]string{"memory.available": "1Gi"},
				EnableServer:   ptr.To(false),     // explicitly false: set
				FeatureGates:   map[string]bool{}, // explicitly empty: set
				FailSwapOn:     nil,               // not given
				HairpinMode:    "",                // zero
				ReadOnlyPort:   0,                 // zero
				Authentication: kubeletconfigv1beta1.KubeletAuthentication{X509: kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: "/ca.crt"}},
				Authorization:  kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeWebhook},
			},
			implemented: []string{"staticPodPath", "syncFrequency", "authorization"},
			want:        []string{"authentication.x509.clientCAFile", "enableServer", "evictionSoft", "featureGates"},
		},
		{
			name: "kubeadm's config.yaml",
			kc:   &kubeadm,
			implemented: []string{"staticPodPath", "cgroupDriver", "healthzPort", "containerRuntimeEndpoint", "syncFrequency",
				"fileCheckFrequency", "nodeStatusUpdateFrequency"},
			want: []string{"authentication.anonymous.enabled", "authentication.webhook.enabled", "authentication.x509.clientCAFile",
				"authorization.mode", "clusterDNS", "clusterDomain", "healthzBindAddress", "rotateCertificates"},
		},
		{
			name:        "kubeadm's config.yaml, authentication and authorization implemented",
			kc:          &kubeadm,
			implemented: []string{"authentication", "authorization", "staticPodPath", "cgroupDriver", "healthzPort", "clusterDNS", "clusterDomain", "healthzBindAddress"},
			want:        []string{"rotateCertificates"},
		},
		{
			name: "a pointer to an empty struct is set itself",
			kc: func() *kubeletconfigv1beta1.KubeletConfiguration {
				var kc kubeletconfigv1beta1.KubeletConfiguration
				require.NoError(t, yaml.UnmarshalStrict([]byte("tracing: {}\nshutdownGracePeriodByPodPriority: []\n"), &kc))
				return &kc
			}(),
			want: []string{"shutdownGracePeriodByPodPriority", "tracing"},
		},
		{
			name: "a pointer to a struct with fields set reports them",
			kc: func() *kubeletconfigv1beta1.KubeletConfiguration {
				var kc kubeletconfigv1beta1.KubeletConfiguration
				require.NoError(t, yaml.UnmarshalStrict([]byte("tracing: {endpoint: otel:4317, samplingRatePerMillion: 0}\n"), &kc))
				return &kc
			}(),
			want: []string{"tracing.endpoint", "tracing.samplingRatePerMillion"},
		},
		{
			name: "a prefix covers only whole path elements",
			kc: &kubeletconfigv1beta1.KubeletConfiguration{
				EvictionHard: map[string]string{"memory.available": "100Mi"}, EvictionSoft: map[string]string{"memory.available": "1Gi"}},
			implemented: []string{"eviction", "evictionHard"},
			want:        []string{"evictionSoft"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, kubeletflags.IgnoredConfigFields(tc.kc, tc.implemented))
		})
	}
}

func TestConfigFields(t *testing.T) {
	fields := kubeletflags.ConfigFields()
	assert.IsIncreasing(t, fields)
	for _, p := range []string{"staticPodPath", "evictionSoft", "authentication", "authentication.x509",
		"authentication.x509.clientCAFile", "authorization.mode", "logging.format", "logging.flushFrequency",
		"logging.options.json.infoBufferSize", "tracing", "tracing.endpoint", "syncFrequency", "featureGates", "registerWithTaints"} {
		assert.Contains(t, fields, p)
	}
	for _, p := range []string{"apiVersion", "kind", "", "syncFrequency.Duration", "logging.flushFrequency.Duration"} {
		assert.NotContains(t, fields, p)
	}

	// Every field the kubeadm file sets is one of them.
	var kc kubeletconfigv1beta1.KubeletConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(kubeadmConfig), &kc))
	for _, p := range kubeletflags.IgnoredConfigFields(&kc, nil) {
		assert.Contains(t, fields, p)
	}
}
