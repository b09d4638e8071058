package kuberuntime_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(obj apiruntime.Object, eventtype, reason, format string, args ...any) {
	ref := obj.(*v1.ObjectReference)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s %s: %s", ref.Name, ref.FieldPath, eventtype, reason, fmt.Sprintf(format, args...)))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func TestSyncPodRecordsTheKubeletsEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	_, client := startFake(t, fake.WithClock(clk))
	rec := &recorder{}
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Clock: clk, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""), Recorder: rec})
	require.NoError(t, err)
	e := &managerEnv{t: t, clock: clk, client: client, m: m, ctx: t.Context()}

	pod := podSpec("ev", v1.RestartPolicyAlways, v1.Container{Name: "web", Image: testImage, Args: []string{"serve"}},
		v1.Container{Name: "crash", Image: testImage, Args: []string{"exit", "1"}})
	res, _ := e.sync(pod, nil)
	require.NoError(t, res.Err())
	assert.Equal(t, []string{
		`ev spec.containers{web} Normal Pulled: Container image "nodekit.local/testbin:1" already present on machine`,
		`ev spec.containers{web} Normal Created: Created container: web`,
		`ev spec.containers{web} Normal Started: Started container web`,
		`ev spec.containers{crash} Normal Pulled: Container image "nodekit.local/testbin:1" already present on machine`,
		`ev spec.containers{crash} Normal Created: Created container: crash`,
		`ev spec.containers{crash} Normal Started: Started container crash`,
	}, rec.take())

	e.sync(pod, nil) // first restart is immediate
	rec.take()
	e.sync(pod, nil)
	assert.Contains(t, rec.take(), "ev spec.containers{crash} Warning BackOff: Back-off restarting failed container crash in pod ev_default(uid-ev)")

	_, err = m.TerminatePod(e.ctx, pod, nil)
	require.NoError(t, err)
	assert.Contains(t, rec.take(), "ev spec.containers{web} Normal Killing: Stopping container web")
}

func TestSyncPodRefusedUserNamespaceIsAFailedSandboxEvent(t *testing.T) {
	_, client := startFake(t)
	rec := &recorder{}
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""), Recorder: rec,
		UserNamespaces: kuberuntime.UserNamespacesFunc(func(*v1.Pod, string) (uint32, uint32, error) {
			return 0, 0, errors.New("can't set `spec.hostUsers: false`, runtime does not support user namespaces")
		})})
	require.NoError(t, err)
	e := &managerEnv{t: t, client: client, m: m, ctx: t.Context()}
	pod := podSpec("userns", v1.RestartPolicyAlways, v1.Container{Name: "web", Image: testImage, Args: []string{"serve"}})
	pod.Spec.HostUsers = new(bool)
	res, st := e.sync(pod, nil)
	require.ErrorIs(t, res.Err(), kuberuntime.ErrConfigPodSandbox)
	assert.Empty(t, st.SandboxStatuses, "no sandbox is created")
	assert.Equal(t, []string{"userns  Warning FailedCreatePodSandBox: Failed to create pod sandbox: " +
		"can't set `spec.hostUsers: false`, runtime does not support user namespaces"}, rec.take())
}
