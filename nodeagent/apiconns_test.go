package nodeagent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/nodeagent"
)

// Close ends a connection that still carries a watch being torn down,
// which CloseIdleConnections leaves (and goleak, in TestMain, would see).
func TestAPIConnectionsCloseEveryConnection(t *testing.T) {
	watching := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		watching <- struct{}{}
		<-r.Context().Done() // a watch the server keeps open
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	rc := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	conns, err := nodeagent.NewAPIConnections(rc)
	require.NoError(t, err)
	client, err := conns.Client(rc)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := client.Pods("").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	<-watching
	conns.Close()
	select {
	case _, ok := <-w.ResultChan():
		assert.False(t, ok, "the watch ends with its connection")
	case <-time.After(10 * time.Second):
		t.Fatal("the watch outlived Close")
	}
	cancel()
}

// TestAPIClientsSpeakProtobuf: as the kubelet, the clients ask for
// protobuf (JSON accepted) and write it, unless the rest.Config names a
// content type.
func TestAPIClientsSpeakProtobuf(t *testing.T) {
	for _, tc := range []struct {
		name, contentType    string
		wantAccept, wantSent string
	}{
		{"default", "", "application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf"},
		{"json asked", "application/json", "application/json, */*", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan http.Header, 2)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Clone()
				http.Error(w, "no", http.StatusTeapot)
			}))
			defer srv.Close()
			rc := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: tc.contentType}}
			conns, err := nodeagent.NewAPIConnections(rc)
			require.NoError(t, err)
			defer conns.Close()
			client, err := conns.Client(rc)
			require.NoError(t, err)
			_, _ = client.Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
			assert.Equal(t, tc.wantAccept, (<-got).Get("Accept"), "a read")
			_, _ = client.Pods("default").Create(context.Background(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
			assert.Equal(t, tc.wantSent, (<-got).Get("Content-Type"), "a write")
		})
	}
}
