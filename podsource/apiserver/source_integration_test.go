//go:build integration

package apiserver

// Tests of Source against a real kube-apiserver + etcd started by
// hack/apiserver-up.sh (see that script). They need, from $DIR/env:
// NODEKIT_KUBECONFIG (admin), NODEKIT_NODE_KUBECONFIG (system:node:<node>)
// and NODEKIT_NODE_NAME. Pods are named nk-<random>-* so that several runs
// (or other users of the same apiserver) do not disturb each other.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/podsource"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

const startAPIServerHelp = `start the test apiserver first:
	NODEKIT_K8S_BIN_DIR=/path/to/k8s-bin bash hack/apiserver-up.sh   # or KUBE_APISERVER_BIN+ETCD_BIN, or let it build (8-13 min)
	. ${NODEKIT_APISERVER_DIR:-/tmp/nodekit-apiserver}/env
then run: go test -race -tags integration -run APIServer ./podsource/`

type apiEnv struct {
	adminCfg, nodeCfg *rest.Config
	node              string
	admin             kubernetes.Interface
}

func requireAPIServer(t *testing.T) *apiEnv {
	t.Helper()
	var missing []string
	for _, k := range []string{"NODEKIT_KUBECONFIG", "NODEKIT_NODE_KUBECONFIG", "NODEKIT_NODE_NAME"} {
		if os.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s not set; %s", strings.Join(missing, ", "), startAPIServerHelp)
	}
	e := &apiEnv{node: os.Getenv("NODEKIT_NODE_NAME")}
	var err error
	e.adminCfg, err = clientcmd.BuildConfigFromFlags("", os.Getenv("NODEKIT_KUBECONFIG"))
	require.NoError(t, err, startAPIServerHelp)
	e.nodeCfg, err = clientcmd.BuildConfigFromFlags("", os.Getenv("NODEKIT_NODE_KUBECONFIG"))
	require.NoError(t, err, startAPIServerHelp)
	e.admin = newClient(t, e.adminCfg)
	if _, err := e.admin.Discovery().ServerVersion(); err != nil {
		t.Fatalf("apiserver at %s not reachable: %v; %s", e.adminCfg.Host, err, startAPIServerHelp)
	}
	return e
}

// newClient builds a clientset on a transport of its own, whose idle
// connections are closed when the test ends (goleak checks the package).
func newClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	require.NoError(t, err)
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: false, IdleConnTimeout: 5 * time.Second}
	rt, err := rest.HTTPWrappersForConfig(cfg, tr)
	require.NoError(t, err)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := kubernetes.NewForConfigAndClient(cfg, &http.Client{Transport: rt})
	require.NoError(t, err)
	return c
}

func randPrefix(t *testing.T) string {
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "nk-" + hex.EncodeToString(b)
}

func (e *apiEnv) createPod(t *testing.T, name, nodeName string) *v1.Pod {
	t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{"nodekit/test": "1"}},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1"}},
			TerminationGracePeriodSeconds: ptr.To[int64](30)},
	}
	out, err := e.admin.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.admin.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	return out
}

// recorder keeps the mux updates about our pods (name prefix).
type recorder struct {
	mu      sync.Mutex
	updates []podsource.PodUpdate
	all     int
	cond    chan struct{}
}

func record(ctx context.Context, mux *podsource.Mux, prefix string) (*recorder, func()) {
	r := &recorder{cond: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case u := <-mux.Updates():
				var mine []*v1.Pod
				for _, p := range u.Pods {
					if strings.HasPrefix(p.Name, prefix) {
						mine = append(mine, p)
					}
				}
				r.mu.Lock()
				r.all++
				if len(mine) > 0 {
					r.updates = append(r.updates, podsource.PodUpdate{Op: u.Op, Source: u.Source, Pods: mine})
				}
				r.mu.Unlock()
				select {
				case r.cond <- struct{}{}:
				default:
				}
			}
		}
	}()
	return r, func() { <-done }
}

// wait returns the first update (from index from) with op for pod name.
func (r *recorder) wait(t *testing.T, from int, op podsource.Op, name string) (*v1.Pod, int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		for i := from; i < len(r.updates); i++ {
			u := r.updates[i]
			for _, p := range u.Pods {
				if u.Op == op && p.Name == name {
					r.mu.Unlock()
					return p, i + 1
				}
			}
		}
		r.mu.Unlock()
		select {
		case <-r.cond:
		case <-deadline:
			t.Fatalf("no %s of %s within 20s; got %v", op, name, r.summary())
		}
	}
}

func (r *recorder) summary() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.updates {
		out = append(out, string(u.Op)+":"+strings.Join(names(u.Pods), ","))
	}
	return out
}

// count is how many times pod name appears with op.
func (r *recorder) count(op podsource.Op, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.updates {
		for _, p := range u.Pods {
			if u.Op == op && p.Name == name {
				n++
			}
		}
	}
	return n
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.updates)
}

func startSource(t *testing.T, ctx context.Context, client PodsGetter, node string) (*Source, *podsource.Mux, func()) {
	t.Helper()
	mux := podsource.NewMux(podsource.MuxConfig{})
	src, err := New(Config{Client: client, NodeName: node, Metrics: podsource.NewMetrics()}, mux)
	require.NoError(t, err)
	mux.Register(src.Name())
	require.False(t, mux.SourcesReady(src.Name()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, src.Run(ctx))
	}()
	return src, mux, func() { <-done }
}

func TestSourceLifecycle(t *testing.T) {
	e := requireAPIServer(t)
	prefix := randPrefix(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	a := e.createPod(t, prefix+"-a", e.node)
	other := e.createPod(t, prefix+"-other", "other-"+prefix)

	// The node's own identity: Node authorizer, field selector spec.nodeName.
	src, mux, wait := startSource(t, ctx, testenv.KubeAPI(t, e.nodeCfg), e.node)
	rec, recDone := record(ctx, mux, prefix)
	defer recDone()
	defer wait()
	defer cancel()

	got, i := rec.wait(t, 0, podsource.ADD, a.Name)
	// The mux marks a source ready once its first set is on the channel,
	// which is after the send that the recorder may see first.
	poll.Eventually(t, func() bool { return mux.SourcesReady(src.Name()) }, 5*time.Second, time.Millisecond, "ready after the first list")
	assert.True(t, src.HasSynced())
	assert.Equal(t, a.UID, got.UID, "API pods keep their UID")
	assert.Equal(t, "default", got.Namespace)
	assert.Equal(t, podsource.SourceAPI, got.Annotations[podsource.ConfigSourceAnnotation])
	assert.Equal(t, "1", got.Annotations["nodekit/test"])
	assert.NotContains(t, got.Annotations, podsource.ConfigHashAnnotation, "no static-pod defaults")
	poll.Eventually(t, func() bool { return src.LastSyncResourceVersion() != "" }, 20*time.Second, 20*time.Millisecond, "the source's first sync version")

	b := e.createPod(t, prefix+"-b", e.node)
	_, i = rec.wait(t, i, podsource.ADD, b.Name)

	// Label change: podsource.UPDATE.
	_, err := e.admin.CoreV1().Pods("default").Patch(ctx, a.Name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	got, i = rec.wait(t, i, podsource.UPDATE, a.Name)
	assert.Equal(t, "y", got.Labels["x"])

	// Status only: podsource.RECONCILE.
	_, err = e.admin.CoreV1().Pods("default").Patch(ctx, a.Name, types.MergePatchType,
		[]byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	got, i = rec.wait(t, i, podsource.RECONCILE, a.Name)
	assert.Equal(t, v1.PodRunning, got.Status.Phase)

	// Graceful delete of a bound pod: a deletion timestamp, DELETE; then the
	// final (forced) delete removes it: podsource.REMOVE.
	require.NoError(t, e.admin.CoreV1().Pods("default").Delete(ctx, b.Name, metav1.DeleteOptions{}))
	got, i = rec.wait(t, i, podsource.DELETE, b.Name)
	assert.NotNil(t, got.DeletionTimestamp)
	require.NoError(t, e.admin.CoreV1().Pods("default").Delete(ctx, b.Name,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	_, i = rec.wait(t, i, podsource.REMOVE, b.Name)

	require.NoError(t, e.admin.CoreV1().Pods("default").Delete(ctx, a.Name,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	_, _ = rec.wait(t, i, podsource.REMOVE, a.Name)

	for _, s := range rec.summary() {
		assert.NotContains(t, s, other.Name, "another node's pod reached the stream")
	}
	assert.Equal(t, 1, rec.count(podsource.ADD, a.Name))
	assert.Equal(t, 1, rec.count(podsource.ADD, b.Name))
}

// cutProxy is a TLS reverse proxy on 127.0.0.1 in front of the apiserver
// that can cut every open request (the watch) abruptly, refuse requests
// for a while, end watches cleanly, and hold resumed watches back (while
// the test restarts the apiserver behind them).
type cutProxy struct {
	srv *httptest.Server
	tr  *http.Transport

	mu       sync.Mutex
	down     bool
	hold     chan struct{} // non-nil: plain watches wait for it to close
	held     int
	inflight map[*http.Request]context.CancelFunc
	bodies   map[*eofOnStop]struct{}
	log      []string // "list rv=..", "watchlist rv=.." (sendInitialEvents), "watch rv=..", "<code> for <request>" when the apiserver did not answer 200, "410 in the stream for watch rv=.."
}

// eofOnStop is a watch response body that ends cleanly (io.EOF) when
// stopped, as when the apiserver ends a watch at its timeout. It calls
// expired when the stream carries the apiserver's 410 (an ERROR event:
// a watch from a too old resource version is answered 200 and then that).
type eofOnStop struct {
	io.ReadCloser
	stopped atomic.Bool
	expired func()
	tail    []byte // the end of the previous read, so a match split across reads is found
}

var tooOld = []byte("too old resource version")

func (b *eofOnStop) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if n > 0 && b.expired != nil {
		seen := append(b.tail, buf[:n]...)
		if bytes.Contains(seen, tooOld) {
			b.expired()
			b.expired = nil
		}
		b.tail = append(b.tail[:0], seen[max(0, len(seen)-len(tooOld)):]...)
	}
	if err != nil && b.stopped.Load() {
		return n, io.EOF
	}
	return n, err
}

func newCutProxy(t *testing.T, upstream *rest.Config) *cutProxy {
	t.Helper()
	tlsCfg, err := rest.TLSConfigFor(upstream)
	require.NoError(t, err)
	p := &cutProxy{tr: &http.Transport{TLSClientConfig: tlsCfg}, inflight: map[*http.Request]context.CancelFunc{},
		bodies: map[*eofOnStop]struct{}{}}
	rt, err := rest.HTTPWrappersForConfig(upstream, p.tr) // adds the node's token
	require.NoError(t, err)
	target, err := url.Parse(upstream.Host)
	require.NoError(t, err)
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: rt,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.mu.Lock()
			p.log = append(p.log, fmt.Sprintf("502 for watch=%s rv=%s: %v", r.URL.Query().Get("watch"), r.URL.Query().Get("resourceVersion"), err))
			p.mu.Unlock()
			w.WriteHeader(http.StatusBadGateway)
		},
		ModifyResponse: func(res *http.Response) error {
			if res.StatusCode != http.StatusOK {
				q := res.Request.URL.Query()
				p.mu.Lock()
				p.log = append(p.log, fmt.Sprintf("%d for watch=%s rv=%s", res.StatusCode, q.Get("watch"), q.Get("resourceVersion")))
				p.mu.Unlock()
			}
			if res.Request.URL.Query().Get("watch") == "true" {
				entry := "410 in the stream for watch rv=" + res.Request.URL.Query().Get("resourceVersion")
				b := &eofOnStop{ReadCloser: res.Body, expired: func() {
					p.mu.Lock()
					p.log = append(p.log, entry)
					p.mu.Unlock()
				}}
				res.Body = b
				p.mu.Lock()
				p.bodies[b] = struct{}{}
				p.mu.Unlock()
			}
			return nil
		},
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		watching := q.Get("watch") == "true" || q.Get("watch") == "1"
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			http.Error(w, "proxy down", http.StatusServiceUnavailable)
			return
		}
		entry := "list rv=" + q.Get("resourceVersion")
		var hold chan struct{}
		if watching {
			entry = "watch rv=" + q.Get("resourceVersion")
			if q.Get("sendInitialEvents") == "true" {
				entry = "watchlist rv=" + q.Get("resourceVersion")
			} else if p.hold != nil {
				hold = p.hold
				p.held++
			}
		}
		p.log = append(p.log, entry)
		ctx, cancel := context.WithCancel(r.Context())
		r = r.WithContext(ctx)
		p.inflight[r] = cancel
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.inflight, r)
			p.mu.Unlock()
			cancel()
		}()
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				p.mu.Lock()
				p.log = append(p.log, "held "+entry+" given up by the client")
				p.mu.Unlock()
				return
			}
		}
		rp.ServeHTTP(w, r)
		if ctx.Err() != nil {
			panic(http.ErrAbortHandler) // cut: drop the connection, no clean end of stream
		}
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.srv.Listener = l
	p.srv.StartTLS()
	t.Cleanup(func() {
		p.cut(false)
		p.srv.Close()
		p.tr.CloseIdleConnections()
	})
	return p
}

// config is a client config for the proxy (no credentials: the proxy adds
// the node's).
func (p *cutProxy) config() *rest.Config {
	return &rest.Config{Host: p.srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})}}
}

// cut aborts every open request; with down, later ones get 503 until up.
func (p *cutProxy) cut(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	for _, cancel := range p.inflight {
		cancel()
	}
}

// endWatches ends the open watches cleanly (end of stream, no error).
func (p *cutProxy) endWatches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for b := range p.bodies {
		b.stopped.Store(true)
		_ = b.Close()
		delete(p.bodies, b)
	}
}

// holdWatches makes plain (resumed) watches wait in the proxy until
// release is called; held says how many have arrived since.
func (p *cutProxy) holdWatches() (held func() int, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	p.hold, p.held = ch, 0
	held = func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.held
	}
	release = func() {
		p.mu.Lock()
		p.hold = nil
		p.mu.Unlock()
		p.tr.CloseIdleConnections() // connections to the apiserver before its restart are dead
		close(ch)
	}
	return held, release
}

// restartAPIServer stops the test kube-apiserver and starts it again on
// the same etcd data, certificates and tokens, with the project's scripts.
func restartAPIServer(t *testing.T) {
	t.Helper()
	hack := filepath.Join("..", "..", "hack")
	for _, args := range [][]string{{filepath.Join(hack, "apiserver-down.sh"), "--only", "kube-apiserver"}, {filepath.Join(hack, "apiserver-up.sh")}} {
		out, err := exec.Command("bash", args...).CombinedOutput()
		require.NoError(t, err, "bash %s: %s", strings.Join(args, " "), out)
	}
}

func (p *cutProxy) up() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func (p *cutProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *cutProxy) watching() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for r := range p.inflight {
		if r.URL.Query().Get("watch") == "true" {
			return true
		}
	}
	return false
}

func TestSourceWatchCutAndExpired(t *testing.T) {
	testenv.LockAPIServer(t, true) // it restarts the apiserver: no other package's test may be using it
	e := requireAPIServer(t)
	prefix := randPrefix(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxy := newCutProxy(t, e.nodeCfg)

	a := e.createPod(t, prefix+"-a", e.node)
	src, mux, wait := startSource(t, ctx, testenv.KubeAPI(t, proxy.config()), e.node)
	rec, recDone := record(ctx, mux, prefix)
	defer recDone()
	defer wait()
	defer cancel()

	_, i := rec.wait(t, 0, podsource.ADD, a.Name)
	poll.Eventually(t, proxy.watching, 20*time.Second, 20*time.Millisecond, "a watch through the proxy")

	// 1. Cut the watch and refuse requests for a while; changes made
	// meanwhile arrive once the source is back, exactly once.
	// The reflector records the version once its initial list (or watch
	// list) is done, which can be just after the first pod is delivered.
	poll.Eventually(t, func() bool { return src.LastSyncResourceVersion() != "" }, 20*time.Second, 20*time.Millisecond, "the source's first sync version")
	nBefore := len(proxy.requests())
	proxy.cut(true)
	b := e.createPod(t, prefix+"-b", e.node)
	_, err := e.admin.CoreV1().Pods("default").Patch(ctx, a.Name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"x":"1"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond) // let the reflector hit the 503s and back off
	proxy.up()
	_, i = rec.wait(t, i, podsource.ADD, b.Name)
	_, i = rec.wait(t, i, podsource.UPDATE, a.Name)
	poll.Eventually(t, proxy.watching, 20*time.Second, 20*time.Millisecond, "the watch to be re-established")
	after := proxy.requests()[nBefore:]
	t.Logf("requests after the cut: %v", after)
	resumed := false
	for _, r := range after {
		if rv := r[strings.Index(r, "rv=")+3:]; rv != "" && rv != "0" {
			resumed = true // list or watch from where it was, not from scratch
		}
		assert.NotContains(t, []string{"list rv=", "watchlist rv=", "list rv=0"}, r, "no list from scratch after a cut")
	}
	assert.True(t, resumed, "the reflector resumed from a resource version: %v", after)

	// 2. The watch ends cleanly (as at its timeout) and the reflector's
	// watch from its resource version is held while a pod is created and
	// the apiserver restarts: the new apiserver's watch cache starts after
	// that version, so it answers 410 "too old resource version" (what a
	// node gets when it was away across an apiserver restart). The
	// reflector lists again and goes on; changes arrive, no duplicates.
	time.Sleep(1100 * time.Millisecond) // a watch shorter than 1s that ends is an error for the reflector
	nBefore = len(proxy.requests())
	held, release := proxy.holdWatches()
	proxy.endWatches()
	poll.Eventually(t, func() bool { return held() > 0 }, 20*time.Second, 20*time.Millisecond,
		"the resumed watch, held by the proxy; requests: %s", func() string { return fmt.Sprint(proxy.requests()) })
	c := e.createPod(t, prefix+"-c", e.node)
	restartAPIServer(t)
	release()
	_, i = rec.wait(t, i, podsource.ADD, c.Name)
	after = proxy.requests()[nBefore:]
	t.Logf("requests after the restart: %v", after)
	expiredAt := -1
	relisted := false
	for k, r := range after {
		if strings.HasPrefix(r, "410 ") {
			expiredAt = k
		}
		if expiredAt >= 0 && k > expiredAt && (strings.HasPrefix(r, "list ") || strings.HasPrefix(r, "watchlist ")) {
			relisted = true
		}
	}
	require.GreaterOrEqual(t, expiredAt, 0, "the resumed watch was answered 410: %v", after)
	assert.True(t, relisted, "a list follows the 410: %v", after)

	require.NoError(t, e.admin.CoreV1().Pods("default").Delete(ctx, b.Name,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	_, _ = rec.wait(t, i, podsource.REMOVE, b.Name)

	for _, name := range []string{a.Name, b.Name, c.Name} {
		assert.Equal(t, 1, rec.count(podsource.ADD, name), "ADD of %s once: %v", name, rec.summary())
	}
	assert.Equal(t, 1, rec.count(podsource.UPDATE, a.Name), "UPDATE once: %v", rec.summary())
	assert.Zero(t, rec.count(podsource.REMOVE, a.Name), "%v", rec.summary())
}
