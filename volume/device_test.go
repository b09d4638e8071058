package volume

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
)

// blockClaims serves claims whose name says their mode: "disk" is a block
// device at /dev/fake-disk, anything else a filesystem at /srv/<name>.
type blockClaims struct{}

func (blockClaims) Name() string                 { return "kubernetes.io~fake-claims" }
func (blockClaims) Supports(vol *v1.Volume) bool { return vol.PersistentVolumeClaim != nil }
func (blockClaims) SetUp(_ *v1.Pod, vol *v1.Volume, _ VolumeDir) (string, error) {
	if vol.PersistentVolumeClaim.ClaimName == "disk" {
		return "/dev/fake-disk", nil
	}
	return "/srv/" + vol.PersistentVolumeClaim.ClaimName, nil
}
func (blockClaims) TearDown(string) error { return nil }
func (blockClaims) IsDevice(_ *v1.Pod, vol *v1.Volume) bool {
	return vol.PersistentVolumeClaim.ClaimName == "disk"
}

// The kubelet's makeBlockVolumes and its volume mode checks: a block
// claim is a device at its volumeDevices' devicePath (read-only with the
// claim's readOnly), and only there.
func TestVolumeDevices(t *testing.T) {
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{blockClaims{}}})
	require.NoError(t, err)
	claim := func(name, claim string, readOnly bool) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{claim("disk", "disk", false), claim("ro-disk", "disk", true), claim("data", "data", false)}}}
	for _, tc := range []struct {
		name    string
		c       v1.Container
		want    []kc.Mount
		wantErr string
	}{
		{name: "devices and mounts", c: v1.Container{VolumeDevices: []v1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"},
			{Name: "ro-disk", DevicePath: "/dev/xvdb"}}, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}},
			want: []kc.Mount{{Name: "data", ContainerPath: "/data", HostPath: "/srv/data"},
				{Name: "disk", ContainerPath: "/dev/xvda", HostPath: "/dev/fake-disk", Device: true},
				{Name: "ro-disk", ContainerPath: "/dev/xvdb", HostPath: "/dev/fake-disk", Device: true, ReadOnly: true}}},
		{name: "block volume mounted", c: v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "disk", MountPath: "/disk"}}},
			wantErr: `volumeMounts[0]: volume "disk" has volumeMode Block, but is specified in volumeMounts`},
		{name: "filesystem as a device", c: v1.Container{VolumeDevices: []v1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}},
			wantErr: `volumeDevices[0]: volume "data" has volumeMode Filesystem, but is specified in volumeDevices`},
		{name: "relative devicePath", c: v1.Container{VolumeDevices: []v1.VolumeDevice{{Name: "disk", DevicePath: "xvda"}}},
			wantErr: "volumeDevices[0].devicePath: error DevicePath `xvda` must be an absolute path"},
		{name: "no such volume", c: v1.Container{VolumeDevices: []v1.VolumeDevice{{Name: "nope", DevicePath: "/dev/xvda"}}},
			wantErr: `volumeDevices[0].name: Not found: "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.ContainerMounts(pod, &tc.c, nil)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
