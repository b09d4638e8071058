package podsource

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

func TestPushHandler(t *testing.T) {
	m := NewMux(MuxConfig{})
	h, err := NewPushHandler(PushConfig{NodeName: node, MaxBodyBytes: 1024}, m)
	require.NoError(t, err)
	m.Register(h.Name())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx) }()
	poll.Eventually(t, m.AllSourcesReady, 5*time.Second, time.Millisecond, "Run delivers the empty first set")
	cancel()
	require.NoError(t, <-done)
	drain(m)

	big := manifest("big", "i") + "  # " + strings.Repeat("x", 2000) + "\n"
	tests := []struct {
		name       string
		method     string
		target     string
		body       string
		wantCode   int
		wantFields []string
		want       []emitted
	}{
		{"post", "POST", "/", manifest("web", "nginx:1"), 201, nil, []emitted{{ADD, "push", []string{"web-node-1"}}}},
		{"post same again", "POST", "/", manifest("web", "nginx:1"), 200, nil, []emitted{}},
		{"post changed", "POST", "/", manifest("web", "nginx:2"), 200, nil,
			[]emitted{{REMOVE, "push", []string{"web-node-1"}}, {ADD, "push", []string{"web-node-1"}}}},
		{"too large", "POST", "/", big, 413, nil, []emitted{}},
		{"bad manifest", "POST", "/", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c}, {name: c, image: i, ports: [{containerPort: 0}]}]}\n", 400,
			[]string{"spec.containers[0].image", "spec.containers[1].name", "spec.containers[1].ports[0].containerPort"}, []emitted{}},
		{"not yaml", "POST", "/", "{", 400, nil, []emitted{}},
		{"delete without name", "DELETE", "/", "", 400, []string{"name"}, []emitted{}},
		{"delete unknown", "DELETE", "/?name=nope", "", 404, nil, []emitted{}},
		{"delete", "DELETE", "/?name=web&namespace=default", "", 204, nil, []emitted{{REMOVE, "push", []string{"web-node-1"}}}},
		{"patch", "PATCH", "/", "", 405, nil, []emitted{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body)))
			assert.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			if tt.wantFields != nil {
				var resp pushResponse
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
				var got []string
				for _, e := range resp.Errors {
					got = append(got, e.Field)
				}
				assert.Equal(t, tt.wantFields, got)
			}
			if tt.wantCode == 201 {
				var resp pushResponse
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
				assert.Equal(t, "web-node-1", resp.Name)
				assert.Len(t, resp.UID, 32)
			}
			assert.Equal(t, tt.want, summarize(drain(m)))
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, 200, rec.Code)
	assert.Contains(t, rec.Body.String(), `"kind":"PodList"`)
}
