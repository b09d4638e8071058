package nodeagent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/nodeagent"
)

// NewAPIClient reads the kubeconfig and talks to its server; bad input
// names the field.
func TestNewAPIClient(t *testing.T) {
	_, err := nodeagent.NewAPIClient(nodeagent.APIClientConfig{})
	assert.EqualError(t, err, "nodeagent: APIClientConfig.Rest: Required value")
	_, err = nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: &rest.Config{}, QPS: -1})
	assert.EqualError(t, err, "nodeagent: APIClientConfig.QPS: Invalid value: -1: must not be negative")
	_, err = nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: &rest.Config{}, Burst: -2})
	assert.EqualError(t, err, "nodeagent: APIClientConfig.Burst: Invalid value: -2: must not be negative")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	}))
	defer srv.Close()
	rc := &rest.Config{Host: srv.URL, QPS: 1}
	c, err := nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: rc})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, float32(1), rc.QPS, "the caller's config is not changed")
	node, err := c.Client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "n1", node.Name)
}
