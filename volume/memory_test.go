package volume

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/podpath"
)

// TestSecretVolumesOnTmpfs pins the kubelet's secret and projected
// plugins, which wrap a memory-backed emptyDir: their files (secrets,
// tokens) live on a tmpfs and never touch the disk; configMap and
// downwardAPI wrap a disk emptyDir. The tmpfs is mounted once, measured
// like the others, and unmounted by a tear-down that knows only the UID
// (an orphaned pod directory).
func TestSecretVolumesOnTmpfs(t *testing.T) {
	fake := fakeMountsFor(t)
	clk := clocktesting.NewFakeClock(time.Now())
	tokens, err := NewTokens(&tokenServer{clock: clk}, clk)
	require.NoError(t, err)
	objs := &objects{
		cms:     map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}},
		secrets: map[string]*v1.Secret{"creds": {Data: map[string][]byte{"pw": []byte("s3cret")}}},
	}
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{
		ConfigMap{Objects: objs}, Secret{Objects: objs}, DownwardAPI{}, Projected{Objects: objs, Tokens: tokens}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}},
		{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
	}}}
	require.NoError(t, m.SetUpAll(pod))
	require.NoError(t, m.SetUpAll(pod), "set up again: mounted once")
	for _, tc := range []struct {
		plugin, name string
		tmpfs        bool
	}{
		{"kubernetes.io~configmap", "cfg", false},
		{"kubernetes.io~secret", "sec", true},
		{"kubernetes.io~downward-api", "info", false},
		{"kubernetes.io~projected", "token", true},
	} {
		dir, err := m.layout.PodVolumeDir("u1", tc.plugin, tc.name)
		require.NoError(t, err)
		assert.Equal(t, tc.tmpfs, fake.isMountPoint(dir), "%s on a tmpfs", tc.name)
	}
	assert.Equal(t, "s3cret", read(t, m.layout.Root()+"/pods/u1/volumes/kubernetes.io~secret/sec/pw"))

	stats, err := m.PodVolumeStats(pod)
	require.NoError(t, err)
	var names []string
	for _, s := range stats {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"cfg", "sec", "info", "token"}, names, "every volume measured, tmpfs or not")

	require.NoError(t, m.TearDown(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}), "the UID alone")
	assert.Empty(t, fake.mounted, "unmounted")
	assert.Empty(t, m.PodUIDs())
}

// TestTmpfsSize pins the kubelet's calculateEmptyDirMemorySize, which
// sizes the tmpfs of medium Memory emptyDirs and of the emptyDirs secret
// and projected volumes wrap: the node's allocatable memory, lowered to
// the pod's memory limit, then to sizeLimit, each when positive and
// smaller; no size option when none is known.
func TestTmpfsSize(t *testing.T) {
	gi := resource.MustParse("1Gi")
	alloc := func() v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: gi} }
	limit := func(n int64) func(*v1.Pod) int64 { return func(*v1.Pod) int64 { return n } }
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	for _, tc := range []struct {
		name      string
		alloc     func() v1.ResourceList
		podLimit  func(*v1.Pod) int64
		sizeLimit *resource.Quantity
		want      string
	}{
		{"nothing known: the kernel's default", nil, nil, nil, ""},
		{"node allocatable", alloc, nil, nil, "size=1073741824"},
		{"pod limit below allocatable", alloc, limit(64 << 20), nil, "size=67108864"},
		{"pod limit above allocatable is ignored", alloc, limit(2 << 30), nil, "size=1073741824"},
		{"no pod limit (0)", alloc, limit(0), nil, "size=1073741824"},
		{"sizeLimit below the pod limit", alloc, limit(64 << 20), q("8Mi"), "size=8388608"},
		{"sizeLimit above the pod limit is ignored", alloc, limit(64 << 20), q("128Mi"), "size=67108864"},
		{"sizeLimit alone", nil, nil, q("8Mi"), "size=8388608"},
		{"pod limit alone", nil, limit(64 << 20), nil, "size=67108864"},
	} {
		fake := fakeMountsFor(t)
		objs := &objects{secrets: map[string]*v1.Secret{"s": {}}}
		m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{
			EmptyDir{NodeAllocatable: tc.alloc, PodMemoryLimit: tc.podLimit},
			Secret{Objects: objs, NodeAllocatable: tc.alloc, PodMemoryLimit: tc.podLimit},
			Projected{NodeAllocatable: tc.alloc, PodMemoryLimit: tc.podLimit}}})
		require.NoError(t, err)
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: tc.sizeLimit}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
			{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}}}}}
		require.NoError(t, m.SetUpAll(pod), tc.name)
		root := m.layout.Root() + "/pods/u1/volumes/"
		assert.Equal(t, tc.want, fake.mounted[root+"kubernetes.io~empty-dir/mem"], "emptyDir: %s", tc.name)
		if tc.sizeLimit == nil {
			assert.Equal(t, tc.want, fake.mounted[root+"kubernetes.io~secret/sec"], "secret: %s", tc.name)
			assert.Equal(t, tc.want, fake.mounted[root+"kubernetes.io~projected/proj"], "projected: %s", tc.name)
		}
	}
}

// A tmpfs of a plugin the Manager no longer has (the agent restarted
// without an API server) is unmounted too, so the directory can go.
func TestTearDownUnmountsWhatNoPluginClaims(t *testing.T) {
	fake := fakeMountsFor(t)
	root := t.TempDir()
	objs := &objects{secrets: map[string]*v1.Secret{"s": {}}}
	before, err := New(Config{Layout: podpath.Layout{RootDir: root}, Plugins: []Plugin{Secret{Objects: objs}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}}}}}
	require.NoError(t, before.SetUpAll(pod))
	require.Len(t, fake.mounted, 1)
	after, err := New(Config{Layout: podpath.Layout{RootDir: root}})
	require.NoError(t, err)
	require.NoError(t, after.TearDown(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}))
	assert.Empty(t, fake.mounted)
	assert.Empty(t, after.PodUIDs())
}
