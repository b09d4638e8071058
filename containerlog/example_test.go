package containerlog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// A container's log rotated on the CRI client, its /var/log/containers
// link made after the start and removed with its logs.
func Example() {
	ctx := context.Background()
	endpoint, stop, _ := fake.StartTemp(fake.WithImages(fake.PauseImage, fake.TestbinImage))
	defer stop()
	client, _ := runtime.Dial(ctx, endpoint)
	defer client.Close(ctx)
	tmp, _ := os.MkdirTemp("", "containerlog")
	defer os.RemoveAll(tmp)

	sandbox := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"},
		LogDirectory: filepath.Join(tmp, "pods", "default_web_uid-web")}
	sb, _ := client.RunPodSandbox(ctx, sandbox, "")
	id, _ := client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: fake.TestbinImage},
		Args: []string{"serve"}, LogPath: "app/0.log",
	}, sandbox)
	_ = client.StartContainer(ctx, id)
	logPath := filepath.Join(sandbox.LogDirectory, "app", "0.log")

	// The kubelet's link, once the container has started.
	links := filepath.Join(tmp, "containers")
	_ = containerlog.MakeSymlinkDir(links)
	ref := containerlog.ContainerRef{PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: id}
	_ = containerlog.CreateSymlink(links, ref, logPath)
	link := containerlog.SymlinkPath(links, ref)
	fmt.Println(strings.TrimSuffix(filepath.Base(link), id+".log"))

	// The container writes more than MaxSize.
	f, _ := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(strings.Repeat("a line of output\n", 100))
	f.Close()

	logs, _ := containerlog.NewManager(containerlog.Config{
		Runtime: client, MaxSize: resource.MustParse("1Ki"),
		Clock: testingclock.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
	})
	rotated, _ := logs.RotateAll(ctx) // one pass of logs.Run
	fmt.Println(len(rotated), "rotated")
	all, _ := containerlog.AllLogs(logPath)
	for _, l := range all {
		fmt.Println(filepath.Base(l))
	}
	target, _ := os.Readlink(link)
	fmt.Println("link to the live log:", target == logPath)

	// Before the container is removed.
	_ = logs.Clean(ctx, id)
	_ = containerlog.RemoveSymlink(links, ref)
	left, _ := os.ReadDir(filepath.Dir(logPath))
	linked, _ := os.ReadDir(links)
	fmt.Println(len(left), "log files,", len(linked), "links")
	// Output:
	// web_default_app-
	// 1 rotated
	// 0.log.20260301-120000
	// 0.log
	// link to the live log: true
	// 0 log files, 0 links
}
