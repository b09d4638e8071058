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
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/runtime"
)

// kubelet serviceHasSynced: no container environment before the Services
// were listed once; then every Service, kept by a watch.
func TestServiceCache(t *testing.T) {
	client := fake.NewClientset(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}})
	s := NewServiceCache(clientgo.Adapt(client))
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

func TestUserNamespacesIDsPerPodIsValidatedAsTheKubelets(t *testing.T) {
	for _, tc := range []struct {
		ids  int64
		want string
	}{
		{ids: 0}, {ids: 65536}, {ids: 65536 * 4},
		{ids: 1000, want: "userNamespaces.idsPerPod must not be less than 65536"},
		{ids: 65536 + 1, want: "userNamespaces.idsPerPod must be a multiple of 65536"},
		{ids: 1 << 32, want: "userNamespaces.idsPerPod must not be more than 4294967295"},
	} {
		cfg := Config{NodeName: "n", NodeIP: "127.0.0.1", Runtime: &runtime.Client{}, UserNamespacesIDsPerPod: tc.ids}
		_, err := cfg.withDefaults()
		if tc.want == "" {
			assert.NoError(t, err, tc.ids)
			continue
		}
		assert.ErrorContains(t, err, "nodeagent: Config.UserNamespacesIDsPerPod: invalid configuration: "+tc.want)
	}
}
