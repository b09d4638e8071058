package podpath_test

import (
	"fmt"

	"github.com/nodekit-dev/nodekit/podpath"
)

// The kubelet's layout, and what it does with a UID that would climb out.
func ExampleLayout() {
	layout := podpath.Layout{RootDir: "/var/lib/kubelet", PodLogsDir: "/var/log/pods"}

	dir, _ := layout.PodVolumeDir("3f1f2a5e", "kubernetes.io~empty-dir", "cache")
	fmt.Println(dir)
	logs, _ := layout.PodLogsDirectory("default", "web", "3f1f2a5e")
	fmt.Println(logs)
	file, _ := podpath.ContainerLogPath("app", 2)
	fmt.Println(file)

	_, err := layout.PodDir("../../etc")
	fmt.Println(err != nil)
	_, err = podpath.Join("/var/lib/kubelet/pods", "..")
	fmt.Println(err)
	// Output:
	// /var/lib/kubelet/pods/3f1f2a5e/volumes/kubernetes.io~empty-dir/cache
	// /var/log/pods/default_web_3f1f2a5e
	// app/2.log
	// true
	// podpath: path element ".." under /var/lib/kubelet/pods: must not be "." or ".."
}
