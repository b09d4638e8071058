package clientgo_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/watchlist"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

// Reflectors ask their client whether it can stream lists: the fake
// cannot, and says so through the adapter; a real clientset can.
func TestAdaptPassesOnWhetherListsStream(t *testing.T) {
	assert.True(t, watchlist.DoesClientNotSupportWatchListSemantics(clientgo.Adapt(fake.NewClientset())))
	real, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	assert.NoError(t, err)
	assert.False(t, watchlist.DoesClientNotSupportWatchListSemantics(clientgo.Adapt(real)))
}
