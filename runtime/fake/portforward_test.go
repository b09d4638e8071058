package fake

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/streamtest"
)

func TestStreamingPortForward(t *testing.T) {
	r, _ := newTest(t, WithHostPorts(true))
	rs := criClient(t, r)
	port := freePort(t, "127.0.0.1")
	cfg := testbin("web")
	cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: "PORT", Value: []byte(port)})
	pc := hostNetwork(podConfig("pf"))
	sb := runPod(t, r, pc)
	start(t, r, create(t, r, sb, pc, cfg))

	resp, err := rs.PortForward(context.Background(), &runtimeapi.PortForwardRequest{PodSandboxId: sb})
	require.NoError(t, err)
	u, err := url.Parse(resp.Url)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", u.Hostname())
	local, stop, err := streamtest.Forward(nil, resp.Url, mustAtoi(t, port))
	require.NoError(t, err)
	defer func() { require.NoError(t, stop()) }()

	node, err := os.Hostname()
	require.NoError(t, err)
	base := "http://127.0.0.1:" + strconv.Itoa(local)
	for range 2 { // a connection each
		code, body := httpGet(t, base+"/")
		assert.Equal(t, 200, code)
		assert.Equal(t, "hello from "+node, body)
	}
}

func TestForwardAddr(t *testing.T) {
	ips := map[string]string{"lo": "127.1.0.5", "far": "10.0.0.5", "gone": "127.1.0.6"}
	var next []string
	r, _ := newTest(t, WithPodIPs(func(n int) string { return ips[next[n-1]] }))
	ctx := context.Background()
	sandbox := func(name string, host bool) string {
		pc := podConfig(name)
		if host {
			pc = hostNetwork(pc)
		} else {
			next = append(next, name)
		}
		return runPod(t, r, pc)
	}
	host, lo, far := sandbox("host", true), sandbox("lo", false), sandbox("far", false)
	stopped := sandbox("gone", false)
	_, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: stopped})
	require.NoError(t, err)

	tests := []struct {
		name, id, want, err string
	}{
		{"host network", host, "127.0.0.1:8080", ""},
		{"loopback pod IP", lo, "127.1.0.5:8080", ""},
		{"other pod IP", far, "", `its IP "10.0.0.5" is not a loopback address`},
		{"stopped", stopped, "", "is closed"},
		{"unknown", "nope", "", `failed to find sandbox "nope" in store: not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.forwardAddr(tt.id, 8080)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
