//go:build integration

package nodeagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// boundClaim makes a persistent volume of src and a claim bound to it, as
// the PV controller would (no kube-controller-manager here): the claim
// names the volume and says Bound, the volume's claimRef has its UID.
// boundClaim makes a claim bound to a volume of src (volumeMode mode, or
// Filesystem).
func boundClaim(ctx context.Context, t testing.TB, admin kubernetes.Interface, ns, name string, src v1.PersistentVolumeSource, affinity *v1.VolumeNodeAffinity,
	mode ...v1.PersistentVolumeMode) {
	t.Helper()
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	size := v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	volumeMode := ptr.To(v1.PersistentVolumeFilesystem)
	if len(mode) > 0 {
		volumeMode = &mode[0]
	}
	pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: rwo, VolumeName: "pv-" + name, StorageClassName: ptr.To(""), VolumeMode: volumeMode,
			Resources: v1.VolumeResourceRequirements{Requests: size}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().PersistentVolumes().Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: v1.PersistentVolumeSpec{AccessModes: rwo, Capacity: size, PersistentVolumeSource: src, NodeAffinity: affinity, VolumeMode: volumeMode,
			StorageClassName: "", ClaimRef: &v1.ObjectReference{Namespace: ns, Name: name, UID: pvc.UID}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pvc.Status.Phase = v1.ClaimBound
	_, err = admin.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deleteClaim(t, admin, ns, name, "pv-"+name) })
}

// deleteClaim deletes a claim and its volume, and takes their protection
// finalizers off: without kube-controller-manager nothing else would, and
// they would stay terminating in the test's API server for good.
func deleteClaim(t testing.TB, admin kubernetes.Interface, ns, claim, pv string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	noFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
	_ = admin.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{})
	_, _ = admin.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, claim, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
	if pv != "" {
		_ = admin.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{})
		_, _ = admin.CoreV1().PersistentVolumes().Patch(ctx, pv, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
	}
}

// TestPersistentVolumesOnContainerd: pods on real containerd use claims
// bound to a local volume (node affinity to this node, bind-mounted below
// the pod's directory) and a hostPath volume, through the node's own
// credentials; what they write is in the volumes' directories on the
// host, and stays there after the pods are gone, with nothing mounted
// and no pod directory left. A claim not bound keeps its pod waiting with
// a FailedMount event.
func TestPersistentVolumesOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, ns := api.Admin, "default"
	localDir, hostDir := t.TempDir(), t.TempDir()
	affinity := &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{api.Node}}}}}}}
	boundClaim(ctx, t, admin, ns, "local-data", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: localDir}}, affinity)
	boundClaim(ctx, t, admin, ns, "host-data", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}, nil)
	_, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "unbound"},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: ptr.To(""),
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deleteClaim(t, admin, ns, "unbound", "") })

	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client = apiClient(t, api.NodeConfig)
	cfg.ManifestPath, cfg.SyncFrequency, cfg.CgroupsPerQOS = t.TempDir(), 2*time.Second, ptr.To(false)
	cfg.NodeStatusUpdateFrequency = time.Second
	rootDir := cfg.RootDir
	_, stop := startContainerdAgent(t, ctx, cfg)
	defer stop()
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), api.Node, metav1.DeleteOptions{}) })

	writer := func(name, claim, file string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{NodeName: api.Node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](0),
				Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
				Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
					Args: []string{"write", "/data/" + file, "written by " + name}, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				RestartPolicy: v1.RestartPolicyNever}}
	}
	for _, p := range []*v1.Pod{writer("local-writer", "local-data", "hello"), writer("host-writer", "host-data", "hello"), writer("waiter", "unbound", "x")} {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		name := p.Name
		t.Cleanup(func() {
			_ = admin.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
	}
	phase := func(name string) v1.PodPhase {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return p.Status.Phase
	}
	for _, name := range []string{"local-writer", "host-writer"} {
		poll.Eventually(t, func() bool { return phase(name) == v1.PodSucceeded }, time.Minute, 100*time.Millisecond, name+" Succeeded")
	}
	for dir, name := range map[string]string{localDir: "local-writer", hostDir: "host-writer"} {
		b, err := os.ReadFile(filepath.Join(dir, "hello"))
		require.NoError(t, err, name)
		assert.Equal(t, "written by "+name, strings.TrimSpace(string(b)))
	}
	poll.Eventually(t, func() bool {
		evs, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=waiter,reason=FailedMount"})
		return err == nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "error processing PVC default/unbound: PVC is not bound")
	}, time.Minute, 100*time.Millisecond, "FailedMount for the unbound claim")
	assert.Equal(t, v1.PodPending, phase("waiter"))

	for _, name := range []string{"local-writer", "host-writer", "waiter"} {
		require.NoError(t, admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	}
	poll.Eventually(t, func() bool {
		for _, name := range []string{"local-writer", "host-writer", "waiter"} {
			if _, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		entries, _ := os.ReadDir(filepath.Join(rootDir, "pods"))
		return len(entries) == 0
	}, time.Minute, 100*time.Millisecond, "pods gone, their directories too")
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), rootDir, "nothing left mounted below the root dir")
	b, err := os.ReadFile(filepath.Join(localDir, "hello"))
	require.NoError(t, err)
	assert.Equal(t, "written by local-writer", strings.TrimSpace(string(b)), "the local volume's data stays")
}
