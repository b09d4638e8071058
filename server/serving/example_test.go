package serving_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/nodekit-dev/nodekit/server/serving"
)

// A node's read-only port and healthz on loopback (Port 0: the
// authenticated API is not served). An agent passes its handlers:
// nodeagent's ReadOnlyHandler and APIHandler().Healthz().
func Example() {
	l, _ := net.Listen("tcp", "127.0.0.1:0") // a free port, for the example
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	healthz := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	servers, err := serving.Listen(serving.Config{HealthzAddress: "127.0.0.1", HealthzPort: port, Healthz: healthz})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- servers.Run(ctx) }()

	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/healthz")
	if err != nil {
		fmt.Println(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	http.DefaultClient.CloseIdleConnections()
	stop()
	fmt.Println(<-done)
	// Output:
	// 200 ok
	// <nil>
}
