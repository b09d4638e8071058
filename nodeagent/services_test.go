package nodeagent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// kubelet serviceHasSynced: no container environment before the Services
// were listed once; then every Service, kept by a watch.
func TestServiceCache(t *testing.T) {
	client := fake.NewClientset(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}})
	s := NewServiceCache(client)
	_, err := s.ListServices()
	require.EqualError(t, err, "services have not yet been read at least once, cannot construct envvars")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	poll.Eventually(t, func() bool { l, err := s.ListServices(); return err == nil && len(l) == 1 }, 10*time.Second, time.Millisecond)
	_, err = client.CoreV1().Services("ns").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool { l, _ := s.ListServices(); return len(l) == 2 }, 10*time.Second, time.Millisecond)
	l, _ := s.ListServices()
	var names []string
	for _, svc := range l {
		names = append(names, svc.Namespace+"/"+svc.Name)
	}
	assert.ElementsMatch(t, []string{"default/kubernetes", "ns/db"}, names)
}
