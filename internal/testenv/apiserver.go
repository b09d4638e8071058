package testenv

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// APIServerHelp says how to start the test kube-apiserver.
const APIServerHelp = `start the test apiserver first:
	NODEKIT_K8S_BIN_DIR=/path/to/k8s-bin bash hack/apiserver-up.sh   # or let it build (8-13 min)
	. ${NODEKIT_APISERVER_DIR:-/tmp/nodekit-apiserver}/env
or run everything with: bash hack/test.sh`

// APIServer is the test kube-apiserver that hack/apiserver-up.sh started:
// an admin client, and a client with the node's identity
// (system:node:<Node>, under the Node authorizer and NodeRestriction).
type APIServer struct {
	AdminConfig, NodeConfig *rest.Config
	Node                    string
	Admin, NodeClient       kubernetes.Interface
}

// NeedAPIServer fails the test, saying why, unless the apiserver answers.
// It holds the apiserver exclusively until the test ends.
func NeedAPIServer(t testing.TB) *APIServer {
	t.Helper()
	var missing []string
	for _, k := range []string{"NODEKIT_KUBECONFIG", "NODEKIT_NODE_KUBECONFIG", "NODEKIT_NODE_NAME"} {
		if os.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s not set; %s", strings.Join(missing, ", "), APIServerHelp)
	}
	// Exclusive: these tests register, delete and re-register the one Node
	// the node credentials are for.
	LockAPIServer(t, true)
	a := &APIServer{Node: os.Getenv("NODEKIT_NODE_NAME")}
	var err error
	if a.AdminConfig, err = clientcmd.BuildConfigFromFlags("", os.Getenv("NODEKIT_KUBECONFIG")); err != nil {
		t.Fatalf("%v; %s", err, APIServerHelp)
	}
	if a.NodeConfig, err = clientcmd.BuildConfigFromFlags("", os.Getenv("NODEKIT_NODE_KUBECONFIG")); err != nil {
		t.Fatalf("%v; %s", err, APIServerHelp)
	}
	a.Admin, a.NodeClient = Client(t, a.AdminConfig), Client(t, a.NodeConfig)
	if _, err := a.Admin.Discovery().ServerVersion(); err != nil {
		t.Fatalf("apiserver at %s not reachable: %v; %s", a.AdminConfig.Host, err, APIServerHelp)
	}
	return a
}

// Client is a clientset over HTTP/1.1 whose idle connections close with
// the test, so that goleak sees no connection goroutines left behind.
func Client(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfigAndClient(cfg, httpClient(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// KubeAPI is Client's kubeapi.Clientset, speaking protobuf as the agent.
func KubeAPI(t testing.TB, cfg *rest.Config) *kubeapi.Clientset {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c, err := kubeapi.New(cfg, httpClient(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// httpClient is cfg's transport over HTTP/1.1, its idle connections closed
// when the test ends.
func httpClient(t testing.TB, cfg *rest.Config) *http.Client {
	t.Helper()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: false, IdleConnTimeout: 5 * time.Second}
	rt, err := rest.HTTPWrappersForConfig(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: rt}
}

// LockAPIServer holds the test apiserver until the test ends: shared for a
// test that uses it, exclusive for one that restarts it, so that a restart
// in one package's tests never pulls it from under another's running in
// parallel. Within one process the lock is taken once and counted: a
// benchmark's function runs several times before its cleanups do.
func LockAPIServer(t testing.TB, exclusive bool) {
	t.Helper()
	held.Lock()
	defer held.Unlock()
	if held.n == 0 {
		dir := os.Getenv("NODEKIT_APISERVER_DIR")
		if dir == "" {
			dir = "/tmp/nodekit-apiserver"
		}
		f, err := os.OpenFile(filepath.Join(dir, "tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("locking the test apiserver: %v; %s", err, APIServerHelp)
		}
		how := unix.LOCK_SH
		if exclusive {
			how = unix.LOCK_EX
		}
		if err := unix.Flock(int(f.Fd()), how); err != nil {
			f.Close()
			t.Fatalf("locking the test apiserver: %v", err)
		}
		held.f = f
	}
	held.n++
	t.Cleanup(func() {
		held.Lock()
		defer held.Unlock()
		if held.n--; held.n == 0 {
			_ = unix.Flock(int(held.f.Fd()), unix.LOCK_UN)
			held.f.Close()
		}
	})
}

var held struct {
	sync.Mutex
	n int
	f *os.File
}
