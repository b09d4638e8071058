//go:build csie2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/csi/csitest"
	"github.com/nodekit-dev/nodekit/internal/poll"
)

// TestCSIStatefulSet runs on the cluster hack/csi-e2e.sh starts
// (kube-apiserver, kube-controller-manager with its attach-detach,
// persistent volume and StatefulSet controllers, kube-scheduler, containerd
// and the reference agent): a CSI driver (csitest, in this process: its
// volumes are directories, really bind-mounted) registers through the
// agent's plugin registry, and the external provisioner, attacher and
// resizer (built from the Go module proxy) serve it. A StatefulSet of 2
// with a volumeClaimTemplate runs; its pods are deleted and come back to
// the data they wrote; a claim grown online completes on the node; once
// the StatefulSet and its claims are deleted, the volumes are detached and
// deleted and nothing is mounted or staged under the agent's root dir.
//
// Env: NODEKIT_CSIE2E_KUBECONFIG (admin), NODEKIT_CSIE2E_ROOT_DIR (the
// agent's --root-dir), NODEKIT_CSIE2E_NODE, NODEKIT_CSIE2E_BIN (csi-provisioner,
// csi-attacher, csi-resizer), NODEKIT_CSIE2E_IMAGE (a busybox image).
func TestCSIStatefulSet(t *testing.T) {
	env := map[string]string{}
	for _, k := range []string{"KUBECONFIG", "ROOT_DIR", "NODE", "BIN", "IMAGE"} {
		if env[k] = os.Getenv("NODEKIT_CSIE2E_" + k); env[k] == "" {
			t.Fatalf("NODEKIT_CSIE2E_%s not set: run hack/csi-e2e.sh", k)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rc, err := clientcmd.BuildConfigFromFlags("", env["KUBECONFIG"])
	require.NoError(t, err)
	rc.QPS, rc.Burst = 100, 100
	c := kubernetes.NewForConfigOrDie(rc)
	const name = "csitest.csi.nodekit.dev"
	data := t.TempDir()
	d, err := csitest.Start(csitest.Config{Name: name, RegistryDir: filepath.Join(env["ROOT_DIR"], "plugins_registry"),
		EndpointDir: filepath.Join(env["ROOT_DIR"], "plugins", name), NodeID: env["NODE"], DataDir: data, Controller: true})
	require.NoError(t, err)
	defer d.Stop()
	for _, s := range []string{"csi-provisioner", "csi-attacher", "csi-resizer"} {
		sidecar(t, filepath.Join(env["BIN"], s), "--csi-address="+d.Endpoint(), "--kubeconfig="+env["KUBECONFIG"], "--v=4")
	}
	poll.Eventually(t, func() bool {
		n, err := c.StorageV1().CSINodes().Get(ctx, env["NODE"], metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(n.Spec.Drivers, func(dr storagev1.CSINodeDriver) bool { return dr.Name == name })
	}, time.Minute, 200*time.Millisecond, "the driver in the node's CSINode")

	_, err = c.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(true),
			FSGroupPolicy: ptr.To(storagev1.FileFSGroupPolicy)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "csitest"},
		Provisioner: name, ReclaimPolicy: ptr.To(v1.PersistentVolumeReclaimDelete), AllowVolumeExpansion: ptr.To(true),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.AppsV1().StatefulSets("default").Create(ctx, statefulSet(env["IMAGE"]), metav1.CreateOptions{})
	require.NoError(t, err)

	running := func(want int) func() bool {
		return func() bool {
			pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
			n := 0
			for _, p := range pods.Items {
				if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
					n++
				}
			}
			return err == nil && n == want
		}
	}
	poll.Eventually(t, running(2), 3*time.Minute, 200*time.Millisecond, "2 StatefulSet pods Running")
	volumes := map[string]string{} // claim → volume (its data directory)
	for _, claim := range []string{"data-db-0", "data-db-1"} {
		pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{})
		require.NoError(t, err)
		volumes[claim] = pvc.Spec.VolumeName
		assert.Equal(t, 1, strings.Count(readFile(t, data, pvc.Spec.VolumeName, "log"), "start"), "%s: started once", claim)
	}
	first := readFile(t, data, volumes["data-db-0"], "first")

	// The pods deleted: the StatefulSet makes them again, on their data.
	var old []types.UID
	pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
	require.NoError(t, err)
	for _, p := range pods.Items {
		old = append(old, p.UID)
		require.NoError(t, c.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}))
	}
	poll.Eventually(t, func() bool {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		for _, p := range pods.Items {
			if slices.Contains(old, p.UID) || p.Status.Phase != v1.PodRunning {
				return false
			}
		}
		return true
	}, 3*time.Minute, 200*time.Millisecond, "the pods back, Running")
	for claim, vol := range volumes {
		assert.Equal(t, 2, strings.Count(readFile(t, data, vol, "log"), "start"), "%s: started twice on the same data", claim)
	}
	assert.Equal(t, first, readFile(t, data, volumes["data-db-0"], "first"), "what the first pod wrote is still there")

	// Online expansion: the resizer, then the node.
	pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-0", metav1.GetOptions{})
	require.NoError(t, err)
	bigger := resource.MustParse("128Mi")
	pvc.Spec.Resources.Requests[v1.ResourceStorage] = bigger
	_, err = c.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-0", metav1.GetOptions{})
		return err == nil && pvc.Status.Capacity.Storage().Cmp(bigger) == 0 && pvc.Status.AllocatedResourceStatuses == nil
	}, 3*time.Minute, time.Second, "the claim grown to 128Mi on the node (at the pod's next sync)")
	assert.Contains(t, d.Calls(), fmt.Sprintf("expand %s %d", volumes["data-db-0"], bigger.Value()))

	// A generic ephemeral volume: its claim made for the pod by the
	// ephemeral volume controller, provisioned, and gone with the pod.
	eph, err := c.CoreV1().Pods("default").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}, Spec: v1.PodSpec{
		HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []v1.Container{{Name: "c", Image: env["IMAGE"], Command: []string{"sh", "-c", "echo scratch > /scratch/x; exec sleep 100000"},
			VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}},
		Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
			VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: ptr.To("csitest"),
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("16Mi")}}}}}}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		p, err := c.CoreV1().Pods("default").Get(ctx, "scratch", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	}, 2*time.Minute, 200*time.Millisecond, "the pod with a generic ephemeral volume Running")
	scratch, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "scratch-scratch", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "scratch\n", readFile(t, data, scratch.Spec.VolumeName, "x"))
	require.NoError(t, c.CoreV1().Pods("default").Delete(ctx, eph.Name, metav1.DeleteOptions{}))

	// All gone: detached, deleted, nothing mounted or staged.
	require.NoError(t, c.AppsV1().StatefulSets("default").Delete(ctx, "db", metav1.DeleteOptions{}))
	poll.Eventually(t, running(0), 2*time.Minute, 200*time.Millisecond, "the pods gone")
	for claim := range volumes {
		require.NoError(t, c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, claim, metav1.DeleteOptions{}))
	}
	poll.Eventually(t, func() bool {
		pvs, err1 := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		vas, err2 := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		_, err3 := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-0", metav1.GetOptions{})
		return err1 == nil && err2 == nil && len(pvs.Items) == 0 && len(vas.Items) == 0 && apierrors.IsNotFound(err3)
	}, 3*time.Minute, 500*time.Millisecond, "%s", func() string { return fmt.Sprintf("volumes detached and deleted; driver calls %q", d.Calls()) })
	for _, vol := range volumes {
		for _, call := range []string{"create", "attach", "stage", "publish", "unpublish", "unstage", "detach", "delete"} {
			assert.True(t, slices.ContainsFunc(d.Calls(), func(c string) bool { return strings.HasPrefix(c, call+" "+vol) }), "%s %s", call, vol)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), filepath.Join(env["ROOT_DIR"], "plugins"), "nothing staged is mounted")
	assert.NotContains(t, string(mounts), data, "no volume mounted")
	staged, _ := filepath.Glob(filepath.Join(env["ROOT_DIR"], "plugins", "kubernetes.io", "csi", name, "*"))
	assert.Empty(t, staged, "no staging directory left")
}

func statefulSet(image string) *appsv1.StatefulSet {
	labels := map[string]string{"app": "db"}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: appsv1.StatefulSetSpec{
		ServiceName: "db", Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.PodSpec{
			HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000)},
			Containers: []v1.Container{{Name: "db", Image: image, ImagePullPolicy: v1.PullIfNotPresent,
				Command:      []string{"sh", "-c", `test -f /data/first || hostname > /data/first; echo start >> /data/log; exec sleep 100000`},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
		VolumeClaimTemplates: []v1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: ptr.To("csitest"),
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Mi")}}}}},
	}}
}

// sidecar runs a CSI sidecar until the test ends, its output in the
// test's log when it fails.
func sidecar(t *testing.T, bin string, args ...string) {
	t.Helper()
	logf := filepath.Join(t.TempDir(), filepath.Base(bin)+".log")
	f, err := os.Create(logf)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start(), "starting %s", bin)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf)
			lines := strings.Split(string(b), "\n")
			t.Logf("%s, last lines:\n%s", filepath.Base(bin), strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	})
}

func readFile(t *testing.T, dir ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir...))
	require.NoError(t, err)
	return string(b)
}
