package cadvisor_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cadvisor"
)

// noPods is a runtime with nothing running.
type noPods struct{}

func (noPods) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return nil, nil
}

func (noPods) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return nil, nil
}

func Example() {
	// A cgroup v2 tree with only the root and kubepods, under a temporary
	// directory; on a node it is /sys/fs/cgroup.
	root, _ := os.MkdirTemp("", "cgroup")
	defer os.RemoveAll(root)
	for _, dir := range []string{root, filepath.Join(root, "kubepods")} {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte("usage_usec 1500000\n"), 0o644)
	}
	c, err := cadvisor.New(cadvisor.Config{Runtime: noPods{}, KubepodsCgroup: "/kubepods",
		MountRoot: root, CgroupV2: ptr.To(true)})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Housekeep(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "/metrics/cadvisor", nil))
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if strings.HasPrefix(line, "container_cpu_usage_seconds_total{") {
			fmt.Println(line[:strings.LastIndexByte(line, ' ')]) // without the timestamp
		}
	}
	// Output:
	// container_cpu_usage_seconds_total{container="",id="/",image="",name="",namespace="",pod="",cpu="total"} 1.5
	// container_cpu_usage_seconds_total{container="",id="/kubepods",image="",name="",namespace="",pod="",cpu="total"} 1.5
}
