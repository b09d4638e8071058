package volume_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/volume"
)

// A pod with an emptyDir mounted through a subPath: Mounts sets it up and
// returns the CRI mounts (as the runtime manager's MountProvider); a UID
// that would climb out of --root-dir is refused; TearDown removes it all.
func ExampleManager_Mounts() {
	root, _ := os.MkdirTemp("", "volume-example-")
	defer os.RemoveAll(root)
	vols, err := volume.New(volume.Config{Layout: podpath.Layout{RootDir: root}})
	if err != nil {
		panic(err)
	}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "3f1f2a5e"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "cache", MountPath: "/cache", SubPath: "app"}}}
	mounts, err := vols.Mounts(pod, c)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range mounts {
		fmt.Println(m.ContainerPath, "<-", strings.TrimPrefix(m.HostPath, root))
	}

	evil := pod.DeepCopy()
	evil.UID = "../../etc"
	_, err = vols.Mounts(evil, c)
	fmt.Println(err)

	fmt.Println(vols.TearDown(pod))
	_, err = os.Stat(filepath.Join(root, "pods", "3f1f2a5e"))
	fmt.Println(os.IsNotExist(err))
	// Output:
	// /cache <- /pods/3f1f2a5e/volumes/kubernetes.io~empty-dir/cache/app
	// volumes[cache]: metadata.uid: Invalid value: "../../etc": a pod UID must consist of ASCII letters, digits and '-', and must start and end with a letter or digit (e.g. '3f1f2a5e-8b0c-4a8e-9d3e-0c1e5b7a9f21', regex used for validation is '[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?')
	// <nil>
	// true
}
