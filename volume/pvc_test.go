package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
	"github.com/nodekit-dev/nodekit/podpath"
)

// claims is a ClaimObjects in memory.
type claims struct {
	pvcs  map[string]*v1.PersistentVolumeClaim
	pvs   map[string]*v1.PersistentVolume
	reads int
}

func (c *claims) GetPersistentVolumeClaim(_ context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	c.reads++
	if p, ok := c.pvcs[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("persistentvolumeclaims %q not found", name)
}

func (c *claims) GetPersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	if p, ok := c.pvs[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("persistentvolumes %q not found", name)
}

// bound is a claim bound to pv.
func bound(name string, pv *v1.PersistentVolume) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("claim-uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv.Name}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: name, UID: pvc.UID}
	return pvc, pv
}

func TestPersistentVolumeClaim(t *testing.T) {
	mounts := fakeMountsFor(t)
	root, data := t.TempDir(), t.TempDir()
	local := func(name string, affinity ...string) *v1.PersistentVolume {
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: data}}}}
		if len(affinity) > 0 {
			pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: affinity}}}}}}
		}
		return pv
	}
	objs := &claims{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}}
	add := func(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) {
		objs.pvcs["ns/"+pvc.Name], objs.pvs[pv.Name] = pvc, pv
	}
	add(bound("data", local("pv-data", "node-1")))
	add(bound("elsewhere", local("pv-elsewhere", "node-2")))
	add(bound("host", &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-host"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: data}}}}))
	add(bound("nfs", &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-nfs"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "x", Path: "/"}}}}))
	pending, _ := bound("pending", local("pv-pending"))
	pending.Status.Phase = v1.ClaimPending
	objs.pvcs["ns/pending"] = pending
	stolenClaim, stolen := bound("stolen", local("pv-stolen"))
	stolen.Spec.ClaimRef.UID = "someone-else"
	add(stolenClaim, stolen)

	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}}}
	plugin := &PersistentVolumeClaim{Objects: objs, Node: func() (*v1.Node, error) { return node, nil }}
	m, err := New(Config{Layout: podpath.Layout{RootDir: root}, Plugins: []Plugin{plugin}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-1"}}
	claim := func(name string, readOnly bool) *v1.Volume {
		return &v1.Volume{Name: "v-" + name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name, ReadOnly: readOnly}}}
	}
	for _, tc := range []struct {
		claim    string
		readOnly bool
		wantHost string
		wantErr  string
	}{
		{claim: "data", wantHost: filepath.Join(root, "pods/pod-1/volumes/kubernetes.io~local-volume/v-data")},
		{claim: "host", wantHost: data},
		{claim: "missing", wantErr: `error processing PVC ns/missing: failed to fetch PVC from API server: persistentvolumeclaims "missing" not found`},
		{claim: "pending", wantErr: "error processing PVC ns/pending: PVC is not bound"},
		{claim: "stolen", wantErr: "error processing PVC ns/stolen: found PV object pv-stolen but its pv.Spec.ClaimRef.UID someone-else does not point to claim.UID"},
		{claim: "elsewhere", wantErr: `MountVolume.NodeAffinity check failed for volume "v-elsewhere" : no matching NodeSelectorTerms`},
		{claim: "nfs", wantErr: "persistent volume pv-nfs: its type is not supported on this node (local, hostPath and, with CSI, csi are)"},
	} {
		host, err := m.SetUp(pod, claim(tc.claim, tc.readOnly))
		if tc.wantErr != "" {
			assert.ErrorContains(t, err, tc.wantErr, tc.claim)
			continue
		}
		require.NoError(t, err, tc.claim)
		assert.Equal(t, tc.wantHost, host, tc.claim)
	}
	local1 := filepath.Join(root, "pods/pod-1/volumes/kubernetes.io~local-volume/v-data")
	assert.Equal(t, "bind:"+data, mounts.mounted[local1])
	reads := objs.reads
	_, err = m.SetUp(pod, claim("data", false))
	require.NoError(t, err)
	assert.Equal(t, reads, objs.reads, "resolved once for the pod's life")

	// Stats: the local PV by statfs of its mount, with its claim; the
	// hostPath PV has none.
	pod.Spec.Volumes = []v1.Volume{*claim("data", false), *claim("host", false)}
	st, err := m.PodPersistentVolumeStats(pod)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, "v-data", st[0].Name)
	assert.Equal(t, &statsapi.PVCReference{Name: "data", Namespace: "ns"}, st[0].PVCRef)
	sf, err := fsstats.Statfs(local1)
	require.NoError(t, err)
	assert.Equal(t, sf.Capacity, *st[0].CapacityBytes)
	assert.Equal(t, sf.Inodes, *st[0].Inodes)
	pod.Spec.Volumes = nil

	ro := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", UID: "pod-2"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{*claim("data", true)}, Containers: []v1.Container{{Name: "c",
			VolumeMounts: []v1.VolumeMount{{Name: "v-data", MountPath: "/data"}}}}}}
	ms, err := m.Mounts(ro, &ro.Spec.Containers[0])
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.True(t, ms[0].ReadOnly, "the claim's readOnly makes the mount read-only")
	assert.Equal(t, "bind:"+data+",ro", mounts.mounted[ms[0].HostPath])

	// Torn down: unmounted, then removed; the data stays.
	require.NoError(t, os.WriteFile(filepath.Join(data, "keep"), []byte("x"), 0o600))
	require.NoError(t, m.TearDown(pod))
	assert.NotContains(t, mounts.mounted, local1)
	assert.NoDirExists(t, filepath.Join(root, "pods/pod-1"))
	assert.FileExists(t, filepath.Join(data, "keep"))
}

// TestTearDownRefusesWhileMounted: a mount the plugins did not undo keeps
// the pod's directory (and what the mount shows) in place.
func TestTearDownRefusesWhileMounted(t *testing.T) {
	mounts := fakeMountsFor(t)
	root := t.TempDir()
	m, err := New(Config{Layout: podpath.Layout{RootDir: root}, Plugins: []Plugin{EmptyDir{}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-1"}}
	stray := filepath.Join(root, "pods/pod-1/volumes/example.com~other/v")
	require.NoError(t, os.MkdirAll(stray, 0o750))
	require.NoError(t, mounts.bindMount("/somewhere", stray, false))
	// unmountMemory undoes any mount of an unknown plugin's volume: a
	// deeper one stays.
	deeper := filepath.Join(stray, "sub")
	require.NoError(t, os.MkdirAll(deeper, 0o750))
	require.NoError(t, mounts.bindMount("/elsewhere", deeper, false))
	err = m.TearDown(pod)
	require.ErrorContains(t, err, "pod pod-1: still mounted below its directory, not removing it")
	assert.DirExists(t, deeper)
}

func TestMountPointsBelow(t *testing.T) {
	info := "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" +
		"90 22 8:1 /data /var/lib/kubelet/pods/u/volumes/kubernetes.io~local-volume/v rw - ext4 /dev/sda1 rw\n" +
		"91 22 0:50 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/with\\040space rw - tmpfs tmpfs rw\n" +
		"92 22 0:51 / /var/lib/kubelet/pods/u2/x rw - tmpfs tmpfs rw\n"
	assert.Equal(t, []string{"/var/lib/kubelet/pods/u/volumes/kubernetes.io~local-volume/v",
		"/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/with space"}, mountPointsBelow(info, "/var/lib/kubelet/pods/u/"))
	assert.Empty(t, mountPointsBelow(info, "/var/lib/kubelet/pods/u3"))
}

// Generic ephemeral volumes: the claim <pod>-<volume> the ephemeral volume
// controller made for the pod (its controller owner), served as any
// claim; one of that name the pod does not own is refused with the
// kubelet's error.
func TestEphemeralVolumeClaims(t *testing.T) {
	fakeMountsFor(t)
	root, data := t.TempDir(), t.TempDir()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pod-1"}}
	objs := &claims{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}}
	for _, name := range []string{"web-scratch", "web-stolen"} {
		pvc, pv := bound(name, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
			Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: data}}}})
		owner := pod.UID
		if name == "web-stolen" {
			owner = "someone-else"
		}
		pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: owner, Controller: ptr.To(true)}}
		objs.pvcs["ns/"+name], objs.pvs[pv.Name] = pvc, pv
	}
	m, err := New(Config{Layout: podpath.Layout{RootDir: root}, Plugins: []Plugin{&PersistentVolumeClaim{Objects: objs}}})
	require.NoError(t, err)
	eph := func(name string) *v1.Volume {
		return &v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}
	}
	host, err := m.SetUp(pod, eph("scratch"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "pods/pod-1/volumes/kubernetes.io~local-volume/scratch"), host)
	_, err = m.SetUp(pod, eph("stolen"))
	require.EqualError(t, err, "PVC ns/web-stolen was not created for pod ns/web (pod is not owner)")
	pod.Spec.Volumes = []v1.Volume{*eph("scratch")}
	st, err := m.PodPersistentVolumeStats(pod)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, &statsapi.PVCReference{Name: "web-scratch", Namespace: "ns"}, st[0].PVCRef)
}

// forbiddenClaims refuses every read, as the Node authorizer does before
// its graph has the pod.
type forbiddenClaims struct{ *claims }

func (forbiddenClaims) GetPersistentVolumeClaim(_ context.Context, _, name string) (*v1.PersistentVolumeClaim, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, name,
		errors.New("no relationship found between node 'node-1' and this object"))
}

// A claim the API server will not show the node yet is pending (tried
// again within the sync), not a failure to back off from; a claim that
// is not there is.
func TestClaimReadsForbiddenArePending(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-1"}}
	vol := &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	for _, tc := range []struct {
		name    string
		objs    ClaimObjects
		pending bool
	}{
		{"forbidden", forbiddenClaims{&claims{}}, true},
		{"not found", &claims{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{&PersistentVolumeClaim{Objects: tc.objs}}})
			require.NoError(t, err)
			_, err = m.SetUp(pod, vol)
			require.ErrorContains(t, err, "error processing PVC ns/data: failed to fetch PVC from API server")
			var p *PendingError
			assert.Equal(t, tc.pending, errors.As(err, &p))
		})
	}
}
