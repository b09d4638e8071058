package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/server"
)

// Serving a container's log, with the kubelet's query parameters.
func Example() {
	dir, _ := os.MkdirTemp("", "logs")
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "0.log")
	_ = os.WriteFile(log, []byte("2026-11-23T10:00:00Z stdout F hello\n2026-11-23T10:00:01Z stdout F world\n"), 0o644)

	// The pod statuses say which instance's log to read (an agent's
	// podstatus.Manager); the locator says where it is.
	web := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://1",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
	h, err := server.New(server.Config{
		Pods: podList{web},
		Logs: server.LogLocatorFunc(func(_ context.Context, ns, pod, container string, previous bool) (string, error) {
			return log, nil // an agent asks its kuberuntime.Manager.ContainerLogPath
		}),
		Checks: []server.HealthCheck{{Name: "ping", Check: func(context.Context) error { return nil }}},
	})
	if err != nil {
		panic(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- server.Serve(ctx, l, h) }()

	for _, path := range []string{"/healthz", "/containerLogs/default/web/c?tailLines=1&timestamps=true"} {
		resp, err := http.Get("http://" + l.Addr().String() + path)
		if err != nil {
			fmt.Println(err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s: %q\n", path, body)
	}
	cancel()
	fmt.Println("stopped:", <-served)
	// Output:
	// /healthz: "ok"
	// /containerLogs/default/web/c?tailLines=1&timestamps=true: "2026-11-23T10:00:01Z world\n"
	// stopped: <nil>
}
