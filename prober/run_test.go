package prober

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// TestManagerProbesRealTargets runs the Manager with its default Runner,
// on the wall clock, against real servers on loopback: plain-HTTP and TCP
// probes go through the batch engine, a redirect to https falls back to
// net/http, and each gets the result its target calls for.
func TestManagerProbesRealTargets(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("tls ok")) }))
	defer tlsSrv.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte("ok"))
		case "/to-https":
			http.Redirect(w, r, tlsSrv.URL+"/", http.StatusFound)
		default:
			http.Error(w, "no", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	httpPort := srv.Listener.Addr().(*net.TCPAddr).Port
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	st := &statuses{m: map[types.UID]*kc.PodStatus{}}
	m, err := New(Config{Statuses: st, Log: funcr.New(func(p, a string) { t.Log(p, a) }, funcr.Options{Verbosity: 1})})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	go drainUpdates(m, done)

	httpProbe := func(path string) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(httpPort))}},
			PeriodSeconds: 1, FailureThreshold: 1}
	}
	tcpProbe := func(port int) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
			PeriodSeconds: 1, FailureThreshold: 1}
	}
	cases := []struct {
		probe *v1.Probe
		want  probe.Result
	}{
		{httpProbe("/ok"), probe.Success},
		{httpProbe("/fail"), probe.Failure},
		{httpProbe("/to-https"), probe.Success}, // followed by net/http: same host
		{tcpProbe(httpPort), probe.Success},
		{tcpProbe(closedPort), probe.Failure},
	}
	for i, c := range cases {
		uid := types.UID("pod" + strconv.Itoa(i))
		st.set(uid, "c", "id"+strconv.Itoa(i), kc.ContainerStateRunning, time.Now().Add(-time.Minute), 0)
		st.m[uid].IPs = []string{"127.0.0.1"} // the servers' address
		m.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid},
			Spec: v1.PodSpec{HostNetwork: true, Containers: []v1.Container{{Name: "c", ReadinessProbe: c.probe}}}})
	}
	for i, c := range cases {
		id := "id" + strconv.Itoa(i)
		w := m.worker(types.UID("pod"+strconv.Itoa(i)), "c", Readiness)
		poll.Eventually(t, func() bool {
			// Readiness starts as Failure: count only a probe's verdict.
			r, ok := m.Readiness().Get(id)
			return ok && r == c.want && testutil.ToFloat64(w.total[c.want]) >= 1
		}, 10*time.Second, 10*time.Millisecond, "case %d: readiness of %s becomes %v; now %s", i, id, c.want, func() string {
			r, ok := m.Readiness().Get(id)
			return fmt.Sprintf("%v (%v), probes: %v success, %v failure, %v unknown", r, ok,
				testutil.ToFloat64(w.total[probe.Success]), testutil.ToFloat64(w.total[probe.Failure]), testutil.ToFloat64(w.total[probe.Unknown]))
		})
	}
	m.RemovePod("pod0")
	poll.Eventually(t, func() bool { return m.Workers() == len(cases)-1 }, 5*time.Second, 10*time.Millisecond)
}
