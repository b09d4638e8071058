package kubeletflags_test

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kubeletflags"
)

func TestConfigFlagValues(t *testing.T) {
	assert.Empty(t, kubeletflags.ConfigFlagValues(&kubeletconfigv1beta1.KubeletConfiguration{}))
	kc := &kubeletconfigv1beta1.KubeletConfiguration{StaticPodPath: "/m", MaxPods: 20, KubeAPIQPS: ptr.To[int32](5),
		SyncFrequency: metav1.Duration{Duration: 30 * time.Second}, KubeReserved: map[string]string{"memory": "1Gi", "cpu": "1"},
		EvictionHard: map[string]string{}, ImageGCLowThresholdPercent: ptr.To[int32](0), CgroupsPerQOS: ptr.To(false),
		AllowedUnsafeSysctls: []string{"a", "b*"}, FailCgroupV1: ptr.To(false)}
	assert.Equal(t, map[string]string{"pod-manifest-path": "/m", "max-pods": "20", "kube-api-qps": "5", "sync-frequency": "30s",
		"kube-reserved": "cpu=1,memory=1Gi", "eviction-hard": "", "image-gc-low-threshold": "0", "cgroups-per-qos": "false",
		"allowed-unsafe-sysctls": "a,b*", "fail-cgroupv1": "false"}, kubeletflags.ConfigFlagValues(kc))
}

func TestApplyConfigFlags(t *testing.T) {
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	maxPods := fs.Int("max-pods", 110, "")
	sync := fs.Duration("sync-frequency", time.Minute, "")
	accepted := kubeletflags.AcceptRest(fs)
	require.NoError(t, fs.Parse([]string{"--max-pods=30"}))
	given := kubeletflags.Given(fs)
	values := map[string]string{"max-pods": "20", "sync-frequency": "30s", "cluster-domain": "x", "not-a-flag": "1"}
	require.NoError(t, kubeletflags.ApplyConfigFlags(fs, values, given))
	assert.Equal(t, 30, *maxPods, "the flag wins")
	assert.Equal(t, 30*time.Second, *sync)
	assert.Empty(t, accepted.Set(), "accepted flags (cluster-domain here) are left alone")
	assert.Equal(t, given, kubeletflags.Given(fs), "the command line's flags alone")
	err := kubeletflags.ApplyConfigFlags(fs, map[string]string{"sync-frequency": "soon"}, given)
	assert.ErrorContains(t, err, `--config: --sync-frequency: invalid value "soon"`)
}
