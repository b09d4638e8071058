package kuberuntime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// imageMounts is the volume package's MountProvider in small: each
// volumeMount of an image volume is a mount with its name, no host path,
// read-only, its subPath as ImageSubPath.
func imageMounts(pod *v1.Pod, c *v1.Container, _ []v1.EnvVar) ([]kc.Mount, error) {
	var out []kc.Mount
	for _, vm := range c.VolumeMounts {
		out = append(out, kc.Mount{Name: vm.Name, ContainerPath: vm.MountPath, ReadOnly: true, ImageSubPath: vm.SubPath})
	}
	return out, nil
}

// TestSyncPodImageVolumes: the kubelet's getImageVolumes and
// toKubeContainerImageVolumes. Each volumes[].image is pulled with its
// pullPolicy before the containers start, events on the pod; a container
// mounting it gets a CRI Mount with the image ID, the reference as
// UserSpecifiedImage, the subPath inside the image, read-only and no host
// path; a failed pull keeps only the containers that mount the volume
// waiting, with the pull's reason (ErrImagePull, then ImagePullBackOff),
// and a Failed "Error: <reason>" event on each of them.
func TestSyncPodImageVolumes(t *testing.T) {
	const (
		pulled = "example.com/data:2"
		absent = "example.com/absent:1"
	)
	vol := func(name, ref string, policy v1.PullPolicy) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: ref, PullPolicy: policy}}}
	}
	for _, tc := range []struct {
		name   string
		volume v1.Volume
		// secondSync syncs again after the first pull failed.
		secondSync bool
		wantReason string // the mounting container's; "" = it runs
		wantEvents []string
		wantImage  string // the CRI mount's image ("" = the present image's ID)
	}{
		{name: "present, IfNotPresent", volume: vol("data", testImage, v1.PullIfNotPresent),
			wantEvents: []string{`iv  Normal Pulled: Container image "nodekit.local/testbin:1" already present on machine`}},
		{name: "present, Never", volume: vol("data", testImage, v1.PullNever),
			wantEvents: []string{`iv  Normal Pulled: Container image "nodekit.local/testbin:1" already present on machine`}},
		{name: "pulled with Always", volume: vol("data", pulled, v1.PullAlways), wantImage: "pulled",
			wantEvents: []string{`iv  Normal Pulling: Pulling image "example.com/data:2"`,
				`iv  Normal Pulled: Successfully pulled image "example.com/data:2" in 0s`}},
		{name: "default policy of a tagged reference", volume: vol("data", testImage, ""),
			wantEvents: []string{`iv  Normal Pulled: Container image "nodekit.local/testbin:1" already present on machine`}},
		{name: "absent, Never", volume: vol("data", absent, v1.PullNever), wantReason: "ErrImageNeverPull",
			wantEvents: []string{`iv  Warning ErrImageNeverPull: Container image "example.com/absent:1" is not present with pull policy of Never`,
				`iv spec.containers{reader} Warning Failed: Error: ErrImageNeverPull`}},
		{name: "pull fails", volume: vol("data", absent, v1.PullIfNotPresent), wantReason: "ErrImagePull",
			wantEvents: []string{`iv  Normal Pulling: Pulling image "example.com/absent:1"`,
				`iv  Warning Failed: Failed to pull image "example.com/absent:1": cri pull_image: NotFound: failed to pull and unpack image "example.com/absent:1": failed to resolve reference "example.com/absent:1": example.com/absent:1: not found`,
				`iv spec.containers{reader} Warning Failed: Error: ErrImagePull`}},
		{name: "pull fails, then backs off", volume: vol("data", absent, v1.PullIfNotPresent), secondSync: true,
			wantReason: "ImagePullBackOff",
			wantEvents: []string{`iv  Normal BackOff: Back-off pulling image "example.com/absent:1"`,
				`iv spec.containers{reader} Warning Failed: Error: ImagePullBackOff`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
			f, client := startFake(t, fake.WithClock(clk))
			f.AllowPull(pulled)
			rec := &recorder{}
			m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Clock: clk, PodLogsDir: t.TempDir(),
				DNS: kuberuntime.HostDNS("", nil, ""), Recorder: rec, Mounts: imageMounts, RuntimeHandler: ""})
			require.NoError(t, err)
			e := &managerEnv{t: t, clock: clk, client: client, m: m, ctx: t.Context()}
			pod := podSpec("iv", v1.RestartPolicyAlways,
				v1.Container{Name: "reader", Image: testImage, Args: []string{"serve"},
					VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "data", MountPath: "/bin/tb", SubPath: "testbin"}}},
				v1.Container{Name: "other", Image: testImage, Args: []string{"serve"}})
			pod.Annotations = map[string]string{"a": "b"}
			pod.Spec.Volumes = []v1.Volume{tc.volume}

			res, st := e.sync(pod, nil)
			if tc.secondSync {
				rec.take()
				res, st = e.sync(pod, nil)
			}
			other := st.FindContainerStatusByName("other")
			require.NotNil(t, other, "a container not mounting it starts")
			assert.Equal(t, kc.ContainerStateRunning, other.State)
			reader := step(res, kuberuntime.ActionStartContainer, "reader")
			require.NotNil(t, reader)
			events := rec.take()
			for _, want := range tc.wantEvents {
				assert.Contains(t, events, want)
			}
			if tc.wantReason != "" {
				assert.Equal(t, tc.wantReason, reader.Reason())
				assert.Contains(t, reader.Message, "pod default/iv: container reader: volume data: ")
				assert.Nil(t, st.FindContainerStatusByName("reader"), "not created")
				return
			}
			require.NoError(t, reader.Err)
			cs := st.FindContainerStatusByName("reader")
			require.NotNil(t, cs)
			resp, err := client.ContainerStatus(e.ctx, cs.ID, false)
			require.NoError(t, err)
			img, err := client.ImageStatus(e.ctx, &runtimeapi.ImageSpec{Image: tc.volume.Image.Reference}, false)
			require.NoError(t, err)
			require.NotNil(t, img.GetImage())
			spec := &runtimeapi.ImageSpec{Image: img.Image.Id, UserSpecifiedImage: tc.volume.Image.Reference,
				Annotations: map[string]string{"a": "b"}}
			var got []*runtimeapi.Mount
			for _, mt := range resp.GetStatus().GetMounts() {
				if mt.GetImage() != nil {
					got = append(got, mt)
				}
			}
			require.Len(t, got, 2)
			for i, want := range []*runtimeapi.Mount{
				{ContainerPath: "/data", Image: spec, Readonly: true},
				{ContainerPath: "/bin/tb", Image: spec, ImageSubPath: "testbin", Readonly: true},
			} {
				assert.Equal(t, want.ContainerPath, got[i].ContainerPath)
				assert.Empty(t, got[i].HostPath, "no host path")
				assert.True(t, got[i].Readonly)
				assert.Equal(t, want.ImageSubPath, got[i].ImageSubPath)
				assert.Equal(t, spec.Image, got[i].Image.Image)
				assert.Equal(t, spec.UserSpecifiedImage, got[i].Image.UserSpecifiedImage)
				assert.Equal(t, spec.Annotations, got[i].Image.Annotations)
			}
		})
	}
}

// TestImageVolumeMountNeedsAPull: a mount with neither a host path nor a
// pulled image (a MountProvider naming a volume that is no image volume)
// fails the container's config, naming the mount, rather than reaching
// the runtime as an empty bind mount.
func TestImageVolumeMountNeedsAPull(t *testing.T) {
	_, client := startFake(t)
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""), Mounts: imageMounts})
	require.NoError(t, err)
	pod := podSpec("nopull", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Args: []string{"serve"},
		VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s"}}})
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	res := m.SyncPod(t.Context(), pod, nil, kuberuntime.SyncOptions{})
	s := step(res, kuberuntime.ActionStartContainer, "c")
	require.NotNil(t, s)
	assert.Equal(t, "CreateContainerConfigError", s.Reason())
	assert.Contains(t, s.Message, `mount at /s: Required value: a host path or, for an image volume, an image`)
}
