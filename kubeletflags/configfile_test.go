package kubeletflags_test

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodekit-dev/nodekit/kubeletflags"
)

func TestResolveRelativePaths(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{StaticPodPath: "manifests", TLSCertFile: "/etc/x.crt", PodLogsDir: "../logs"}
	kubeletflags.ResolveRelativePaths(kc, "/etc/kubelet")
	assert.Equal(t, "/etc/kubelet/manifests", kc.StaticPodPath)
	assert.Equal(t, "/etc/x.crt", kc.TLSCertFile, "absolute: kept")
	assert.Equal(t, "/etc/logs", kc.PodLogsDir)
	assert.Empty(t, kc.TLSPrivateKeyFile, "unset: kept")
}

func TestTakeAndJoinMap(t *testing.T) {
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	maxPods := fs.Int("max-pods", 110, "")
	domain := fs.String("cluster-domain", "", "")
	require.NoError(t, fs.Parse([]string{"--max-pods", "20"}))
	given := kubeletflags.Given(fs)
	assert.Equal(t, map[string]bool{"max-pods": true}, given)
	kubeletflags.Take(given, "max-pods", maxPods, 30)
	assert.Equal(t, 20, *maxPods, "the flag wins")
	kubeletflags.Take(given, "cluster-domain", domain, "")
	assert.Equal(t, "", *domain, "unset in the file")
	kubeletflags.Take(given, "cluster-domain", domain, "cluster.local")
	assert.Equal(t, "cluster.local", *domain)
	assert.Equal(t, "cpu=100m,memory=1Gi", kubeletflags.JoinMap(map[string]string{"memory": "1Gi", "cpu": "100m"}, "="))
	assert.Equal(t, "", kubeletflags.JoinMap(nil, "<"))
}
