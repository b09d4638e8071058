//go:build integration

package nodeagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// TestAgentImageVolumeOnContainerd: a static pod with image volumes
// (volumes[].image, the upstream [Conformance] "ImageVolume should succeed
// with pod") on the real containerd 2. The image volume's files are there
// in the container, whole and through a directory subPath, the binary
// runs from it; writing to it fails (read-only); the CRI mount names the
// image by its ID (containerd reports its own mount point of the image as
// the host path). A container mounting an image volume
// that is absent under pullPolicy Never waits with ErrImageNeverPull
// while the others run. containerd (2.4) mounts only directory subPaths
// of an image: a file subPath is the runtime's CreateContainerError, as
// under the kubelet.
func TestAgentImageVolumeOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "iv.yaml"), []byte(`apiVersion: v1
kind: Pod
metadata: {name: iv}
spec:
  containers:
  - name: reader
    image: nodekit.local/testbin:1
    imagePullPolicy: Never
    args: [sleep]
    volumeMounts:
    - {name: img, mountPath: /vol}
    - {name: img, mountPath: /sub, subPath: etc}
  - name: filesub
    image: nodekit.local/testbin:1
    imagePullPolicy: Never
    args: [sleep]
    volumeMounts:
    - {name: img, mountPath: /tb, subPath: testbin}
  - name: blocked
    image: nodekit.local/testbin:1
    imagePullPolicy: Never
    args: [sleep]
    volumeMounts:
    - {name: absent, mountPath: /absent}
  volumes:
  - {name: img, image: {reference: "nodekit.local/testbin:1"}}
  - {name: absent, image: {reference: "nodekit.local/absent:1", pullPolicy: Never}}
`), 0o644))

	cgroupRoot := testenv.CgroupRoot + "/imgvol-" + rand.String(6)
	cfg := containerdConfig(t, cd, "imgvol")
	cfg.ManifestPath, cfg.FileCheckFrequency, cfg.CgroupRoot = dir, 200*time.Millisecond, cgroupRoot
	t.Cleanup(func() {
		cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cgroupRoot})
		require.NoError(t, err)
		assert.NoError(t, cg.Destroy(cg.KubepodsCgroupName()), "QoS cgroups removable: no pod left in them")
		for _, d := range []string{"cpu", "memory", "pids"} {
			_ = os.Remove(filepath.Join("/sys/fs/cgroup", d, cgroupRoot))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, stop := startContainerdAgent(t, ctx, cfg)
	defer stop()

	status := func(p *v1.Pod, name string) *v1.ContainerStatus {
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == name {
				return &p.Status.ContainerStatuses[i]
			}
		}
		return nil
	}
	var pod *v1.Pod
	defer func() {
		if t.Failed() && pod != nil {
			t.Logf("last status: %+v", pod.Status)
		}
	}()
	poll.Eventually(t, func() bool {
		pod = podNamed(a, "iv-imgvol")
		if pod == nil {
			return false
		}
		waiting := func(name, reason string) bool {
			c := status(pod, name)
			return c != nil && c.State.Waiting != nil && c.State.Waiting.Reason == reason
		}
		r := status(pod, "reader")
		return r != nil && r.State.Running != nil && waiting("blocked", "ErrImageNeverPull") && waiting("filesub", "CreateContainerError")
	}, 30*time.Second, 50*time.Millisecond, "reader running, blocked waiting with ErrImageNeverPull, filesub with CreateContainerError")
	blocked, filesub := status(pod, "blocked"), status(pod, "filesub")
	t.Logf("blocked: %s: %s", blocked.State.Waiting.Reason, blocked.State.Waiting.Message)
	t.Logf("filesub: %s: %s", filesub.State.Waiting.Reason, filesub.State.Waiting.Message)
	assert.Contains(t, blocked.State.Waiting.Message, `Container image "nodekit.local/absent:1" is not present with pull policy of Never`)
	assert.Contains(t, filesub.State.Waiting.Message, "ImageVolumeMountFailed", "the runtime's error, as the kubelet shows it")

	client := cfg.Runtime
	id := strings.TrimPrefix(status(pod, "reader").ContainerID, "containerd://")
	exec := func(cmd ...string) *struct {
		out, errOut string
		code        int32
	} {
		r, err := client.ExecSyncCmd(ctx, id, cmd, 10*time.Second)
		require.NoError(t, err, "%v", cmd)
		return &struct {
			out, errOut string
			code        int32
		}{string(r.Stdout), string(r.Stderr), r.ExitCode}
	}
	for _, tc := range []struct {
		name string
		cmd  []string
		code int32
		out  string // in stdout, or in stderr on failure
	}{
		{"the image's file runs from the volume", []string{"/vol/testbin", "echo", "read", "from", "the", "image"}, 0, "read from the image\n"},

		{"no new file in it", []string{"/testbin", "write", "/vol/new", "x"}, 1, "read-only file system"},
		{"its files cannot be changed", []string{"/testbin", "write", "/vol/testbin", "x"}, 1, "read-only file system"},
		{"nor the subPath's", []string{"/testbin", "write", "/sub/passwd", "x"}, 1, "read-only file system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := exec(tc.cmd...)
			t.Logf("%v: exit %d stdout %q stderr %q", tc.cmd, r.code, r.out, r.errOut)
			assert.Equal(t, tc.code, r.code)
			if tc.code == 0 {
				assert.Equal(t, tc.out, r.out)
			} else {
				assert.Contains(t, r.errOut, tc.out)
			}
		})
	}

	// The subPath's files, read from the host through the container's
	// root: the image's /etc at /sub, the same as the container's own
	// (same image) /etc.
	resp, err := client.ContainerStatus(ctx, id, true)
	require.NoError(t, err)
	var info struct{ Pid int }
	require.NoError(t, json.Unmarshal([]byte(resp.Info["info"]), &info), "verbose info: %q", resp.Info["info"])
	root := fmt.Sprintf("/proc/%d/root", info.Pid)
	sub, err := os.ReadFile(root + "/sub/passwd")
	require.NoError(t, err, "the image's etc/passwd through subPath etc")
	own, err := os.ReadFile(root + "/etc/passwd")
	require.NoError(t, err)
	assert.Equal(t, string(own), string(sub))
	assert.Contains(t, string(sub), "root:x:0:0")
	_, err = os.Stat(root + "/sub/testbin")
	assert.ErrorIs(t, err, os.ErrNotExist, "only the subPath is mounted")

	img, err := client.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: testenv.TestImage}, false)
	require.NoError(t, err)
	resp, err = client.ContainerStatus(ctx, id, false)
	require.NoError(t, err)
	var imageMounts []*runtimeapi.Mount
	for _, m := range resp.GetStatus().GetMounts() {
		t.Logf("mount %s host %q image %v subPath %q ro %v", m.ContainerPath, m.HostPath, m.GetImage(), m.ImageSubPath, m.Readonly)
		if m.GetImage() != nil {
			imageMounts = append(imageMounts, m)
		}
	}
	require.Len(t, imageMounts, 2, "containerd reports both image mounts")
	assert.Equal(t, []string{"", "etc"}, []string{imageMounts[0].ImageSubPath, imageMounts[1].ImageSubPath})
	for _, m := range imageMounts {
		assert.Equal(t, img.GetImage().GetId(), m.Image.Image, "the image by its ID, as the kubelet passes it")
		assert.Equal(t, testenv.TestImage, m.Image.UserSpecifiedImage)
		assert.Contains(t, m.HostPath, "/image-volumes/", "containerd reports its own mount of the image; the agent gave no host path")
		assert.NotContains(t, m.HostPath, cfg.RootDir)
		assert.True(t, m.Readonly)
	}

	require.NoError(t, os.Remove(filepath.Join(dir, "iv.yaml")))
	poll.Eventually(t, func() bool {
		pods, err := a.Runtime().GetPods(ctx, true)
		require.NoError(t, err)
		for _, p := range pods {
			if p.Name == "iv-imgvol" {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "pod removed from containerd")
}
