//go:build integration

package nodeagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/testutil"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/csi/csitest"
	"github.com/nodekit-dev/nodekit/csi/nodeinfo"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/pluginmanager"
	"github.com/nodekit-dev/nodekit/runtime"
)

// TestCSIDriverRegistration: with the node's own credentials on a real
// kube-apiserver, a CSI driver that puts its registration socket in the
// agent's plugins_registry is registered: its node ID in the Node's
// csi.volume.kubernetes.io/nodeid annotation, its topology as a Node
// label, its entry (with its volume limit) in the node's CSINode, owned by
// the Node; when its socket goes, both are removed again.
func TestCSIDriverRegistration(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := api.Admin
	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client = apiClient(t, api.NodeConfig)
	cfg.ManifestPath, cfg.CgroupsPerQOS, cfg.NodeStatusUpdateFrequency = t.TempDir(), ptr.To(false), time.Second
	a, stop := startContainerdAgent(t, ctx, cfg)
	defer stop()
	t.Cleanup(func() {
		_ = admin.CoreV1().Nodes().Delete(context.Background(), api.Node, metav1.DeleteOptions{})
		_ = admin.StorageV1().CSINodes().Delete(context.Background(), api.Node, metav1.DeleteOptions{})
	})
	poll.Eventually(t, func() bool {
		node, err := admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		cn, err := admin.StorageV1().CSINodes().Get(ctx, api.Node, metav1.GetOptions{})
		return err == nil && len(cn.OwnerReferences) == 1 && cn.OwnerReferences[0].UID == node.UID
	}, 30*time.Second, 100*time.Millisecond, "the CSINode made, owned by the Node registered now (not an earlier one's)")

	d, err := csitest.Start(csitest.Config{Name: "fake.csi.nodekit.dev", RegistryDir: filepath.Join(cfg.RootDir, pluginmanager.DefaultDirName),
		EndpointDir: filepath.Join(cfg.RootDir, "plugins", "fake.csi.nodekit.dev"), NodeID: "fake-" + api.Node, MaxVolumes: 16,
		Topology: map[string]string{"topology.fake.csi.nodekit.dev/node": api.Node}})
	require.NoError(t, err)
	defer d.Stop()
	poll.Eventually(t, func() bool { ok, _, told := d.Registered(); return told && ok }, 30*time.Second, 100*time.Millisecond, "the driver told it is registered")
	assert.Equal(t, []string{"fake.csi.nodekit.dev"}, a.CSIDrivers().Drivers())
	node, err := admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
	require.NoError(t, err)
	var ids map[string]string
	require.NoError(t, json.Unmarshal([]byte(node.Annotations[nodeinfo.AnnotationNodeID]), &ids))
	assert.Equal(t, map[string]string{"fake.csi.nodekit.dev": "fake-" + api.Node}, ids)
	assert.Equal(t, api.Node, node.Labels["topology.fake.csi.nodekit.dev/node"])
	cn, err := admin.StorageV1().CSINodes().Get(ctx, api.Node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, cn.Spec.Drivers, 1)
	assert.Equal(t, "fake-"+api.Node, cn.Spec.Drivers[0].NodeID)
	assert.Equal(t, []string{"topology.fake.csi.nodekit.dev/node"}, cn.Spec.Drivers[0].TopologyKeys)
	assert.Equal(t, int32(16), *cn.Spec.Drivers[0].Allocatable.Count)

	d.Stop()
	poll.Eventually(t, func() bool {
		cn, err := admin.StorageV1().CSINodes().Get(ctx, api.Node, metav1.GetOptions{})
		node, nerr := admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
		return err == nil && nerr == nil && len(cn.Spec.Drivers) == 0 && node.Annotations[nodeinfo.AnnotationNodeID] == ""
	}, 30*time.Second, 100*time.Millisecond, "uninstalled once its socket is gone")
	assert.Empty(t, a.CSIDrivers().Drivers())
}

// startCSIAgent runs the agent cfg makes, as node, with the fake driver dc
// (its registry, endpoint and node ID filled in) registered through the
// agent's plugin registry and a CSIDriver object of spec for it. The
// driver, the agent, then the Node and its CSINode go when the test ends.
func startCSIAgent(ctx context.Context, t testing.TB, admin kubernetes.Interface, cfg nodeagent.Config, node string, dc csitest.Config,
	spec storagev1.CSIDriverSpec) (*nodeagent.Agent, *csitest.Driver) {
	t.Helper()
	t.Cleanup(func() {
		_ = admin.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{})
		_ = admin.StorageV1().CSINodes().Delete(context.Background(), node, metav1.DeleteOptions{})
	})
	agent, _ := startContainerdAgent(t, ctx, cfg)
	dc.RegistryDir, dc.EndpointDir, dc.NodeID = filepath.Join(cfg.RootDir, pluginmanager.DefaultDirName), filepath.Join(cfg.RootDir, "plugins", dc.Name), node
	d, err := csitest.Start(dc)
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	poll.Eventually(t, func() bool { ok, _, told := d.Registered(); return told && ok }, 30*time.Second, 100*time.Millisecond, "driver registered")
	_, err = admin.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: dc.Name}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.StorageV1().CSIDrivers().Delete(context.Background(), dc.Name, metav1.DeleteOptions{})
	})
	return agent, d
}

// TestCSIVolumeOnContainerd: a pod on real containerd uses a claim bound
// to a CSI persistent volume of a registered driver (csitest's, which
// bind-mounts as a real driver mounts). The driver has no CSIDriver
// object, so the volume needs attaching: the pod waits (FailedMount) until
// its VolumeAttachment says attached (the test plays the attach-detach
// controller and the external attacher), and the node reports the volume
// in use. Then the volume is staged once and published to the pod, what
// the pod writes is in the driver's volume, and once the pod is deleted it
// is unpublished, then unstaged, with nothing left mounted below the root
// dir.
func TestCSIVolumeOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, ns := api.Admin, "default"
	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client = apiClient(t, api.NodeConfig)
	cfg.ManifestPath, cfg.CgroupsPerQOS, cfg.NodeStatusUpdateFrequency = t.TempDir(), ptr.To(false), time.Second
	cfg.SyncFrequency = 2 * time.Second
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	data := t.TempDir()
	agent, d := startCSIAgent(ctx, t, admin, cfg, api.Node, csitest.Config{Name: "fake.csi.nodekit.dev", DataDir: data},
		storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), FSGroupPolicy: ptr.To(storagev1.FileFSGroupPolicy)})
	boundClaim(ctx, t, admin, ns, "csi-data", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
		Driver: "fake.csi.nodekit.dev", VolumeHandle: "vol-1"}}, nil)

	writer, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "csi-writer"},
		Spec: v1.PodSpec{NodeName: api.Node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](0), RestartPolicy: v1.RestartPolicyNever,
			SecurityContext: &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000)},
			Volumes:         []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "csi-data"}}}},
			Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
				Args: []string{"write", "/data/hello", "through CSI"}, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(ns).Delete(context.Background(), "csi-writer", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	attachment := csi.AttachmentName("vol-1", "fake.csi.nodekit.dev", api.Node)
	poll.Eventually(t, func() bool {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "csi-writer", metav1.GetOptions{})
		return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating"
	}, time.Minute, 100*time.Millisecond, "ContainerCreating, waiting for the attachment")
	assert.Empty(t, d.Calls(), "nothing staged before it is attached")
	va, err := admin.StorageV1().VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachment},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "fake.csi.nodekit.dev", NodeName: api.Node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-csi-data")}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.StorageV1().VolumeAttachments().Delete(context.Background(), attachment, metav1.DeleteOptions{})
	})
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/fake"}}
	_, err = admin.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "csi-writer", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodSucceeded
	}, time.Minute, 100*time.Millisecond, "the pod wrote through the volume")
	b, err := os.ReadFile(filepath.Join(data, "vol-1", "hello"))
	require.NoError(t, err)
	assert.Equal(t, "through CSI", string(b))
	assert.Equal(t, []string{"stage vol-1", "publish vol-1"}, d.Calls())
	for _, f := range []string{filepath.Join(data, "vol-1"), filepath.Join(data, "vol-1", "hello")} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, uint32(2000), fi.Sys().(*syscall.Stat_t).Gid, "%s: the pod's fsGroup (fsGroupPolicy File)", f)
	}
	evs, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(writer.UID) + ",reason=FailedMount"})
	require.NoError(t, err)
	assert.Empty(t, evs.Items, "no FailedMount while the attachment was awaited")
	poll.Eventually(t, func() bool {
		n, err := admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
		return err == nil && slices.Contains(n.Status.VolumesInUse, v1.UniqueVolumeName("kubernetes.io/csi/fake.csi.nodekit.dev^vol-1"))
	}, 30*time.Second, 100*time.Millisecond, "the volume in the node's volumesInUse")

	checkCSIVolumeStats(ctx, t, admin, agent, reg, api.Node, data)
	checkCSIExpansion(ctx, t, admin, d)

	for _, name := range []string{"csi-writer", "csi-holder"} {
		require.NoError(t, admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	}
	count := func(calls []string, call string) (n int) {
		for _, c := range calls {
			if c == call+" vol-1" {
				n++
			}
		}
		return n
	}
	poll.Eventually(t, func() bool {
		calls := d.Calls()
		return count(calls, "publish") == 2 && count(calls, "unpublish") == 2 && count(calls, "unstage") == count(calls, "stage") &&
			calls[len(calls)-1] == "unstage vol-1"
	}, time.Minute, 100*time.Millisecond, "unpublished and unstaged: %s", func() string { return fmt.Sprintf("%q", d.Calls()) })
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), cfg.RootDir, "nothing left mounted below the root dir")
	staged, _ := filepath.Glob(filepath.Join(cfg.RootDir, "plugins", "kubernetes.io", "csi", "fake.csi.nodekit.dev", "*"))
	assert.Empty(t, staged, "the staging directory is gone")
}

// checkCSIVolumeStats runs a pod holding the claim csi-data and reads its
// volume's stats, from the driver's NodeGetVolumeStats (the statfs of the
// filesystem dataDir is on), in the Summary API and kubelet_volume_stats_*.
func checkCSIVolumeStats(ctx context.Context, t *testing.T, admin kubernetes.Interface, agent *nodeagent.Agent, reg *prometheus.Registry, node, dataDir string) {
	t.Helper()
	_, err := admin.CoreV1().Pods("default").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "csi-holder"},
		Spec: v1.PodSpec{NodeName: node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "csi-data"}}}},
			Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
				Args: []string{"sleep"}, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods("default").Delete(context.Background(), "csi-holder", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	poll.Eventually(t, func() bool {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "csi-holder", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	}, time.Minute, 100*time.Millisecond, "csi-holder Running")
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dataDir, &st))
	capacity, inodes := uint64(st.Blocks)*uint64(st.Bsize), st.Files

	summary, err := agent.Summary().Summary(ctx)
	require.NoError(t, err)
	var got *statsapi.VolumeStats
	for _, ps := range summary.Pods {
		if ps.PodRef.Name == "csi-holder" {
			for i := range ps.VolumeStats {
				if ps.VolumeStats[i].Name == "data" {
					got = &ps.VolumeStats[i]
				}
			}
		}
	}
	require.NotNil(t, got, "csi-holder's volume in /stats/summary")
	assert.Equal(t, &statsapi.PVCReference{Name: "csi-data", Namespace: "default"}, got.PVCRef)
	assert.Equal(t, capacity, *got.CapacityBytes)
	assert.Equal(t, inodes, *got.Inodes)
	assert.InEpsilon(t, float64(st.Bavail)*float64(st.Bsize), float64(*got.AvailableBytes), 0.05)

	expected := fmt.Sprintf(`# HELP kubelet_volume_stats_capacity_bytes Capacity in bytes of the volume
# TYPE kubelet_volume_stats_capacity_bytes gauge
kubelet_volume_stats_capacity_bytes{namespace="default",persistentvolumeclaim="csi-data"} %d
# HELP kubelet_volume_stats_inodes Maximum number of inodes in the volume
# TYPE kubelet_volume_stats_inodes gauge
kubelet_volume_stats_inodes{namespace="default",persistentvolumeclaim="csi-data"} %d
`, capacity, inodes)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected), "kubelet_volume_stats_capacity_bytes", "kubelet_volume_stats_inodes"))
}

// checkCSIExpansion plays the external resizer for csi-data (the PV grown
// to 2Gi, the claim NodeResizePending) and waits for the agent's online
// expansion: NodeExpandVolume to 2Gi, the claim's status at 2Gi with no
// resize status left, FileSystemResizeSuccessful on the pod using it.
func checkCSIExpansion(ctx context.Context, t *testing.T, admin kubernetes.Interface, d *csitest.Driver) {
	t.Helper()
	two := resource.MustParse("2Gi")
	pv, err := admin.CoreV1().PersistentVolumes().Get(ctx, "pv-csi-data", metav1.GetOptions{})
	require.NoError(t, err)
	pv.Spec.Capacity[v1.ResourceStorage] = two
	_, err = admin.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	require.NoError(t, err)
	pvc, err := admin.CoreV1().PersistentVolumeClaims("default").Get(ctx, "csi-data", metav1.GetOptions{})
	require.NoError(t, err)
	pvc.Status.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	pvc.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: two}
	pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}
	pvc.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue}}
	_, err = admin.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		pvc, err := admin.CoreV1().PersistentVolumeClaims("default").Get(ctx, "csi-data", metav1.GetOptions{})
		return err == nil && pvc.Status.Capacity.Storage().Cmp(two) == 0 && pvc.Status.AllocatedResourceStatuses == nil &&
			len(pvc.Status.Conditions) == 0
	}, time.Minute, 100*time.Millisecond, "the claim's status says 2Gi: %s", func() string {
		pvc, _ := admin.CoreV1().PersistentVolumeClaims("default").Get(ctx, "csi-data", metav1.GetOptions{})
		return fmt.Sprintf("%+v", pvc.Status)
	})
	assert.Contains(t, d.Calls(), fmt.Sprintf("expand vol-1 %d", two.Value()))
	holder, err := admin.CoreV1().Pods("default").Get(ctx, "csi-holder", metav1.GetOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(holder.UID) + ",reason=FileSystemResizeSuccessful"})
		return err == nil && len(evs.Items) == 1 && strings.HasPrefix(evs.Items[0].Message, `MountVolume.NodeExpandVolume succeeded for volume "pv-csi-data"`)
	}, 30*time.Second, 100*time.Millisecond, "FileSystemResizeSuccessful on the pod; events: %s", func() string {
		evs, _ := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		var got []string
		for _, e := range evs.Items {
			got = append(got, e.InvolvedObject.Name+" "+e.Reason+": "+e.Message)
		}
		return fmt.Sprintf("%q", got)
	})
}

// TestCSIBlockVolumeOnContainerd: a claim of volumeMode Block is published
// as a block device (CSI block access type: the fake driver bind-mounts a
// loop device on the target file) and is a device at its devicePath in
// the container, which writes to it; the host reads that from the loop
// device. The pod gone, it is unpublished and unstaged, nothing left.
func TestCSIBlockVolumeOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, ns := api.Admin, "default"
	backing := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.WriteFile(backing, make([]byte, 64<<10), 0o600))
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	require.NoError(t, err, "losetup (util-linux) makes the test's loop device: %s", out)
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", loop).Run() })

	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client = apiClient(t, api.NodeConfig)
	cfg.ManifestPath, cfg.CgroupsPerQOS, cfg.NodeStatusUpdateFrequency = t.TempDir(), ptr.To(false), time.Second
	// The online expansion comes at the pod's next sync, as the kubelet's
	// (its SyncPod reprocesses the pod's volumes): within the default
	// minute and half again, a sync after the claim's change was luck.
	cfg.SyncFrequency = 2 * time.Second
	_, d := startCSIAgent(ctx, t, admin, cfg, api.Node, csitest.Config{Name: "block.csi.nodekit.dev", DataDir: t.TempDir(), BlockDevice: loop},
		storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)})
	boundClaim(ctx, t, admin, ns, "block-data", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
		Driver: "block.csi.nodekit.dev", VolumeHandle: "disk-1"}}, nil, v1.PersistentVolumeBlock)

	_, err = admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "block-writer"},
		Spec: v1.PodSpec{NodeName: api.Node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](0), RestartPolicy: v1.RestartPolicyNever,
			Volumes: []v1.Volume{{Name: "disk", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "block-data"}}}},
			Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
				Args: []string{"write", "/dev/xvda", "written to the device"}, VolumeDevices: []v1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(ns).Delete(context.Background(), "block-writer", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	poll.Eventually(t, func() bool {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "block-writer", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodSucceeded
	}, time.Minute, 100*time.Millisecond, "the pod wrote to the device")
	f, err := os.Open(loop)
	require.NoError(t, err)
	head := make([]byte, len("written to the device"))
	_, err = io.ReadFull(f, head)
	f.Close()
	require.NoError(t, err)
	assert.Equal(t, "written to the device", string(head))
	assert.Equal(t, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, d.PublishRequest("disk-1").GetVolumeCapability().GetAccessMode().GetMode())
	assert.NotNil(t, d.PublishRequest("disk-1").GetVolumeCapability().GetBlock(), "published with the block access type")

	require.NoError(t, admin.CoreV1().Pods(ns).Delete(ctx, "block-writer", metav1.DeleteOptions{}))
	poll.Eventually(t, func() bool { return len(d.Calls()) == 4 }, time.Minute, 100*time.Millisecond, "unpublished and unstaged")
	assert.Equal(t, []string{"stage disk-1", "publish disk-1", "unpublish disk-1", "unstage disk-1"}, d.Calls())

	checkBlockExpansion(ctx, t, admin, cfg.Runtime, api.Node)
	require.NoError(t, admin.CoreV1().Pods(ns).Delete(ctx, "block-holder", metav1.DeleteOptions{}))
	poll.Eventually(t, func() bool { return len(d.Calls()) == 9 }, time.Minute, 100*time.Millisecond, "%s", func() string {
		return fmt.Sprintf("unpublished and unstaged again: %q", d.Calls())
	})
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), cfg.RootDir, "nothing left mounted below the root dir")
}

// TestCSIInlineVolumeOnContainerd: a pod's inline ephemeral CSI volume
// (a driver whose CSIDriver lists Ephemeral) is published for the pod,
// not staged, with the pod's information, written by the container, and
// unpublished when the pod goes.
func TestCSIInlineVolumeOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, ns := api.Admin, "default"
	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client = apiClient(t, api.NodeConfig)
	cfg.ManifestPath, cfg.CgroupsPerQOS, cfg.NodeStatusUpdateFrequency = t.TempDir(), ptr.To(false), time.Second
	data := t.TempDir()
	_, d := startCSIAgent(ctx, t, admin, cfg, api.Node, csitest.Config{Name: "inline.csi.nodekit.dev", DataDir: data},
		storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}})
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "inline-writer"},
		Spec: v1.PodSpec{NodeName: api.Node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](0), RestartPolicy: v1.RestartPolicyNever,
			Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "inline.csi.nodekit.dev",
				VolumeAttributes: map[string]string{"size": "1Mi"}}}}},
			Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
				Args: []string{"write", "/scratch/hello", "inline"}, VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(ns).Delete(context.Background(), "inline-writer", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	poll.Eventually(t, func() bool {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "inline-writer", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodSucceeded
	}, time.Minute, 100*time.Millisecond, "the pod wrote through the inline volume")
	handle := csi.InlineHandle(pod, "scratch")
	b, err := os.ReadFile(filepath.Join(data, handle, "hello"))
	require.NoError(t, err)
	assert.Equal(t, "inline", string(b))
	ctxAttrs := d.PublishRequest(handle).GetVolumeContext()
	assert.Equal(t, "true", ctxAttrs["csi.storage.k8s.io/ephemeral"])
	assert.Equal(t, "inline-writer", ctxAttrs["csi.storage.k8s.io/pod.name"])

	require.NoError(t, admin.CoreV1().Pods(ns).Delete(ctx, "inline-writer", metav1.DeleteOptions{}))
	poll.Eventually(t, func() bool { return len(d.Calls()) == 2 }, time.Minute, 100*time.Millisecond, "unpublished")
	assert.Equal(t, []string{"publish " + handle, "unpublish " + handle}, d.Calls())
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), cfg.RootDir, "nothing left mounted below the root dir")
}

// checkBlockExpansion runs a pod holding block-data (64 KiB), plays the
// external resizer (the PV grown to 128 KiB, the claim NodeResizePending)
// and reads the device from inside the running container until it is
// 128 KiB long: the node's NodeExpandVolume grew the fake driver's loop
// device under the pod.
func checkBlockExpansion(ctx context.Context, t *testing.T, admin kubernetes.Interface, rt *runtime.Client, node string) {
	t.Helper()
	_, err := admin.CoreV1().Pods("default").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "block-holder"},
		Spec: v1.PodSpec{NodeName: node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Volumes: []v1.Volume{{Name: "disk", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "block-data"}}}},
			Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
				Args: []string{"sleep"}, VolumeDevices: []v1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods("default").Delete(context.Background(), "block-holder", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	var id string
	poll.Eventually(t, func() bool {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "block-holder", metav1.GetOptions{})
		if err != nil || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		_, id, _ = strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
		return true
	}, time.Minute, 100*time.Millisecond, "block-holder Running")
	deviceSize := func() int {
		out, _, err := rt.ExecSync(ctx, id, []string{"/testbin", "read", "/dev/xvda"}, 10*time.Second)
		require.NoError(t, err)
		return len(out)
	}
	require.Equal(t, 64<<10, deviceSize(), "the device in the container before")

	grown := resource.MustParse("128Ki")
	pv, err := admin.CoreV1().PersistentVolumes().Get(ctx, "pv-block-data", metav1.GetOptions{})
	require.NoError(t, err)
	pv.Spec.Capacity[v1.ResourceStorage] = grown
	_, err = admin.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	require.NoError(t, err)
	pvc, err := admin.CoreV1().PersistentVolumeClaims("default").Get(ctx, "block-data", metav1.GetOptions{})
	require.NoError(t, err)
	pvc.Status.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Ki")}
	pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}
	_, err = admin.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		pvc, err := admin.CoreV1().PersistentVolumeClaims("default").Get(ctx, "block-data", metav1.GetOptions{})
		return err == nil && pvc.Status.Capacity.Storage().Cmp(grown) == 0 && pvc.Status.AllocatedResourceStatuses == nil
	}, time.Minute, 100*time.Millisecond, "the claim's status says 128Ki")
	assert.Equal(t, 128<<10, deviceSize(), "the device in the running container after the online expansion")
}
