//go:build integration

package pleg_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/statuscache"
)

// TestPLEGOnContainerd: against the real containerd, a container that
// starts, exits with a code and is removed yields ContainerStarted (within
// two relist periods), ContainerDied (exit code in the cache) and
// ContainerRemoved — for the relister, and for the evented PLEG, which
// follows containerd 2's events (its own relist is 300s, so the events
// are what it sees in time) and on containerd 1.6, which has none, must
// fall back to relisting.
func TestPLEGOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	mgr, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir()})
	require.NoError(t, err)
	const period = time.Second
	events := hasContainerEvents(t, client)

	for _, tc := range []struct {
		name string
		make func(cache *statuscache.Cache) pleg.PLEG
	}{
		{"generic", func(cache *statuscache.Cache) pleg.PLEG {
			g, err := pleg.NewGeneric(pleg.Config{Runtime: mgr, Cache: cache, RelistPeriod: period})
			require.NoError(t, err)
			return g
		}},
		{"evented", func(cache *statuscache.Cache) pleg.PLEG {
			e, err := pleg.NewEvented(pleg.EventedConfig{Config: pleg.Config{Runtime: mgr, Cache: cache, RelistPeriod: period}, Events: client})
			require.NoError(t, err)
			t.Cleanup(func() {
				assert.Equal(t, !events, e.FellBack(), "falls back exactly when the runtime has no events (runtime has events: %v)", events)
			})
			return e
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := statuscache.New()
			p := tc.make(cache)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { assert.NoError(t, p.Run(ctx)); close(done) }()
			defer func() { cancel(); <-done }()
			// Read events from the start, as pod workers do: containerd
			// replays to a new subscriber what it queued while nobody
			// listened (up to 5 minutes of other tests' containers), and
			// a Watch channel left unread meanwhile would fill and drop
			// this pod's events.
			seen := collect(p)

			port := freePort(t)
			uid := types.UID("pleg-" + rand.String(8))
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "pleg", Namespace: "default", UID: uid},
				Spec: v1.PodSpec{HostNetwork: true, RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{
					Name: "web", Image: testenv.TestImage, Args: []string{"serve"},
					Env: []v1.EnvVar{{Name: "PORT", Value: strconv.Itoa(port)}},
				}}},
			}
			t.Cleanup(func() {
				require.NoError(t, mgr.RemovePod(context.Background(), uid))
				testenv.RemovePodCgroup(t, string(uid))
			})
			require.NoError(t, mgr.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(string(uid))}).Err())
			started := time.Now()
			status, err := mgr.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
			require.NoError(t, err)
			web := status.FindContainerStatusByName("web")
			require.NotNil(t, web)

			waitEvent(t, seen, uid, pleg.ContainerStarted, web.ID, 3*period)
			assert.LessOrEqual(t, time.Since(started), 2*period, "ContainerStarted within two relist periods")

			// Exit with a code through the server itself.
			poll.Eventually(t, func() bool {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/exit?code=7", port))
				if err == nil {
					resp.Body.Close()
				}
				return err == nil
			}, 10*time.Second, 50*time.Millisecond, "the container's server answers")
			waitEvent(t, seen, uid, pleg.ContainerDied, web.ID, 3*period)
			cached, err := cache.Get(uid)
			require.NoError(t, err)
			cs := cached.FindContainerStatusByName("web")
			require.NotNil(t, cs, "the cache holds the pod's status")
			assert.Equal(t, kc.ContainerStateExited, cs.State)
			assert.Equal(t, 7, cs.ExitCode, "exit code visible in the cache")

			require.NoError(t, client.RemoveContainer(ctx, web.ID))
			waitEvent(t, seen, uid, pleg.ContainerRemoved, web.ID, 3*period)
			ok, err := p.Healthy()
			assert.True(t, ok, "%v", err)
		})
	}
}

// hasContainerEvents: the runtime streams container events (containerd 2)
// rather than answering Unimplemented on the first receive (containerd
// 1.6), which it does at once.
func hasContainerEvents(t *testing.T, client *runtime.Client) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// Drained: an unread stream would hold up containerd's event queue,
	// and with it every other subscriber, until the deadline.
	ch := make(chan *runtimeapi.ContainerEventResponse, 100)
	go func() {
		for range ch {
		}
	}()
	err := client.GetContainerEvents(ctx, ch, nil)
	close(ch)
	if errors.Is(err, runtime.ErrUnimplemented) {
		return false
	}
	require.ErrorIs(t, err, runtime.ErrDeadlineExceeded, "the event stream stays open until the deadline")
	return true
}

// events records what a PLEG sends, read as it comes.
type events struct {
	mu   sync.Mutex
	seen []*pleg.PodLifecycleEvent
}

// collect reads until Run closes the Watch channel.
func collect(p pleg.PLEG) *events {
	e := &events{}
	go func() {
		for ev := range p.Watch() {
			e.mu.Lock()
			e.seen = append(e.seen, ev)
			e.mu.Unlock()
		}
	}()
	return e
}

func (e *events) has(uid types.UID, typ pleg.EventType, id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.seen {
		if ev.ID == uid && ev.Type == typ && ev.ContainerID == id {
			return true
		}
	}
	return false
}

func waitEvent(t *testing.T, e *events, uid types.UID, typ pleg.EventType, id string, within time.Duration) {
	t.Helper()
	poll.Eventually(t, func() bool { return e.has(uid, typ, id) }, within, 10*time.Millisecond,
		"no %s for container %s within %s", typ, id, within)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
