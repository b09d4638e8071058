package probe_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/nodekit-dev/nodekit/prober/probe"
)

// An httpGet probe against a server on loopback, judged as the kubelet does.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	p := probe.NewHTTP(probe.HTTPOptions{})
	for _, path := range []string{"/healthz", "/other"} {
		res, msg, err := p.Probe(context.Background(), probe.HTTPRequest{Host: host, Port: port, Path: path})
		fmt.Println(path, res, err)
		_ = msg
	}
	res, _, _ := probe.TCP(context.Background(), host, port, 0)
	fmt.Println("tcp", res)
	// Output:
	// /healthz success <nil>
	// /other failure <nil>
	// tcp success
}
