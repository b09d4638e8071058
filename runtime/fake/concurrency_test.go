package fake

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestConcurrentUse drives the state machine from several goroutines
// while the fake clock fires scripted exits, to catch lock-order mistakes
// (the clock's lock and the Runtime's) and data races under -race.
func TestConcurrentUse(t *testing.T) {
	r, clk := newTest(t, WithBehavior(RemovableImage, BehaviorOf(Program{IgnoreSIGTERM: true})), WithImages(RemovableImage))
	events, cancel := r.Subscribe()
	defer cancel()
	ctx := context.Background()
	const workers, rounds = 4, 20

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the clock
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				clk.Step(100 * time.Millisecond)
			}
		}
	}()
	wg.Add(1)
	go func() { // a reader
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-events:
			default:
				_, _ = r.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
				_, _ = r.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
			}
		}
	}()

	var workersWG sync.WaitGroup
	for w := range workers {
		workersWG.Add(1)
		go func() {
			defer workersWG.Done()
			for i := range rounds {
				pc := podConfig(fmt.Sprintf("w%d-%d", w, i))
				sb, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
				if !assert.NoError(t, err) {
					return
				}
				sleeper := testbin("sleeper", "sleep", "0.3")
				stubborn := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "stubborn"},
					Image: &runtimeapi.ImageSpec{Image: RemovableImage}}
				var ids []string
				for _, cfg := range []*runtimeapi.ContainerConfig{sleeper, stubborn, testbin("server")} {
					c, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: pc, Config: cfg})
					if !assert.NoError(t, err) {
						return
					}
					_, err = r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
					if !assert.NoError(t, err) {
						return
					}
					ids = append(ids, c.ContainerId)
				}
				// Waits for the clock goroutine to pass one second.
				_, err = r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ids[1], Timeout: 1})
				if !assert.NoError(t, err) {
					return
				}
				_, err = r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ids[2], Cmd: []string{"/testbin", "sleep", "0.2"}, Timeout: 5})
				if !assert.NoError(t, err) {
					return
				}
				_, err = r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId})
				if !assert.NoError(t, err) {
					return
				}
			}
		}()
	}
	workersWG.Wait()
	close(stop)
	wg.Wait()
	list, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Containers)
}
