//go:build integration

package nodeagent_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/csi/csitest"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// BenchmarkPodStartWithVolume: the time from a pod bound to the node
// (created with its nodeName) to Running seen through a watch, with one
// volume: an emptyDir, or a claim bound to a CSI volume of the fake
// driver (real bind mounts: NodeStageVolume, NodePublishVolume), one pod
// at a time on the real containerd and kube-apiserver, both kinds on the
// same agent in the same run. Each iteration is one pod (-benchtime 20x:
// 20 pods); p50-ms and p99-ms are over them. The claims are made before
// the timer runs; the CSIDriver needs no attaching (an attacher's own time
// is not the node's).
func BenchmarkPodStartWithVolume(b *testing.B) {
	cd := testenv.NeedContainerd(b)
	api := testenv.NeedAPIServer(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The test's own calls unthrottled (client-go's default is 5 per
	// second): a claim's three calls before each pod would otherwise
	// delay the pod's creation, not the node.
	rc := rest.CopyConfig(api.AdminConfig)
	rc.QPS, rc.Burst = 1000, 1000
	admin := testenv.Client(b, rc)
	cfg := containerdConfig(b, cd, api.Node)
	cfg.Client = apiClient(b, api.NodeConfig)
	cfg.ManifestPath, cfg.CgroupsPerQOS, cfg.NodeStatusUpdateFrequency = b.TempDir(), ptr.To(false), time.Second
	startCSIAgent(ctx, b, admin, cfg, api.Node, csitest.Config{Name: "bench.csi.nodekit.dev", DataDir: b.TempDir()},
		storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)})
	pods := 0 // names are not reused across the runs of a sub-benchmark
	for _, kind := range []string{"emptyDir", "csi"} {
		b.Run(kind, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			first := pods
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				name := fmt.Sprintf("bench-%s-%d", strings.ToLower(kind), pods)
				pods++
				src := v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
				if kind == "csi" {
					boundClaim(ctx, b, admin, "default", name, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
						Driver: "bench.csi.nodekit.dev", VolumeHandle: name}}, nil)
					src = v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
				}
				b.StartTimer()
				lat = append(lat, startPod(ctx, b, admin, api.Node, name, src))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[(len(lat)*99)/100]), "p99-ms")
			for i := first; i < pods; i++ {
				name := fmt.Sprintf("bench-%s-%d", strings.ToLower(kind), i)
				_ = admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
			poll.Eventually(b, func() bool {
				pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
				return err == nil && len(pods.Items) == 0
			}, 2*time.Minute, 100*time.Millisecond, "the benchmark's pods gone")
		})
	}
	poll.Eventually(b, func() bool {
		mounts, err := os.ReadFile("/proc/self/mountinfo")
		return err == nil && !strings.Contains(string(mounts), cfg.RootDir)
	}, time.Minute, 100*time.Millisecond, "the volumes unmounted")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// startPod creates a pod bound to node with one volume and returns how
// long until a watch saw it Running.
func startPod(ctx context.Context, b *testing.B, admin kubernetes.Interface, node, name string, src v1.VolumeSource) time.Duration {
	b.Helper()
	w, err := admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	require.NoError(b, err)
	defer w.Stop()
	start := time.Now()
	_, err = admin.CoreV1().Pods("default").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{NodeName: node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Volumes: []v1.Volume{{Name: "data", VolumeSource: src}},
			Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
				Args: []string{"sleep"}, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
		metav1.CreateOptions{})
	require.NoError(b, err)
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(b, ok, "watch of %s ended", name)
			if p, isPod := ev.Object.(*v1.Pod); isPod && ev.Type == watch.Modified && p.Status.Phase == v1.PodRunning {
				return time.Since(start)
			}
		case <-timeout:
			b.Fatalf("pod %s not Running in a minute", name)
		}
	}
}
