package kubeapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// request is what the fake API server saw.
type request struct {
	Method, Path, Query, ContentType string
	Body                             map[string]any
}

// fakeAPI records each request and answers with reply's object as JSON.
func fakeAPI(t *testing.T, reply func(r *http.Request) any) (*kubeapi.Clientset, *[]request) {
	t.Helper()
	var seen []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rq := request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, ContentType: r.Header.Get("Content-Type")}
		if len(b) > 0 {
			require.NoError(t, json.Unmarshal(b, &rq.Body), string(b))
		}
		seen = append(seen, rq)
		w.Header().Set("Content-Type", "application/json")
		require.NoError(t, json.NewEncoder(w).Encode(reply(r)))
	}))
	t.Cleanup(srv.Close)
	return newClientset(t, srv.URL, rest.Config{}), &seen
}

// serving is a Clientset of cfg on a server answering with h.
func serving(t *testing.T, cfg rest.Config, h http.HandlerFunc, opts ...kubeapi.Option) *kubeapi.Clientset {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newClientset(t, srv.URL, cfg, opts...)
}

// newClientset is a Clientset of cfg for the server at url.
func newClientset(t *testing.T, url string, cfg rest.Config, opts ...kubeapi.Option) *kubeapi.Clientset {
	t.Helper()
	cfg.Host = url
	hc, err := rest.HTTPClientFor(&cfg)
	require.NoError(t, err)
	cs, err := kubeapi.New(&cfg, hc, opts...)
	require.NoError(t, err)
	return cs
}

func TestVerbsReachTheirPaths(t *testing.T) {
	pod := &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		reply any
		call  func(cs *kubeapi.Clientset) (runtime.Object, error)
		want  request
	}{
		{"get", pod, func(cs *kubeapi.Clientset) (runtime.Object, error) {
			return cs.Pods("ns").Get(ctx, "web", metav1.GetOptions{ResourceVersion: "0"})
		}, request{Method: "GET", Path: "/api/v1/namespaces/ns/pods/web", Query: "resourceVersion=0"}},
		{"list all namespaces", &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}},
			func(cs *kubeapi.Clientset) (runtime.Object, error) {
				return cs.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
			}, request{Method: "GET", Path: "/api/v1/pods", Query: "fieldSelector=spec.nodeName%3Dn1"}},
		{"create", pod, func(cs *kubeapi.Clientset) (runtime.Object, error) {
			return cs.Pods("ns").Create(ctx, pod, metav1.CreateOptions{})
		}, request{Method: "POST", Path: "/api/v1/namespaces/ns/pods", ContentType: "application/json"}},
		{"update status", pod, func(cs *kubeapi.Clientset) (runtime.Object, error) {
			return cs.Pods("ns").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		}, request{Method: "PUT", Path: "/api/v1/namespaces/ns/pods/web/status", ContentType: "application/json"}},
		{"patch status", pod, func(cs *kubeapi.Clientset) (runtime.Object, error) {
			return cs.Pods("ns").Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"status":{}}`),
				metav1.PatchOptions{}, "status")
		}, request{Method: "PATCH", Path: "/api/v1/namespaces/ns/pods/web/status",
			ContentType: "application/strategic-merge-patch+json", Body: map[string]any{"status": map[string]any{}}}},
		{"cluster-scoped", &v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}},
			func(cs *kubeapi.Clientset) (runtime.Object, error) {
				return cs.Nodes().Get(ctx, "n1", metav1.GetOptions{})
			},
			request{Method: "GET", Path: "/api/v1/nodes/n1"}},
		{"lease", &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"}},
			func(cs *kubeapi.Clientset) (runtime.Object, error) {
				return cs.Leases("kube-node-lease").Get(ctx, "n1", metav1.GetOptions{})
			}, request{Method: "GET", Path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1"}},
		{"csinode", &storagev1.CSINode{TypeMeta: metav1.TypeMeta{Kind: "CSINode", APIVersion: "storage.k8s.io/v1"}},
			func(cs *kubeapi.Clientset) (runtime.Object, error) {
				return cs.CSINodes().Get(ctx, "n1", metav1.GetOptions{})
			},
			request{Method: "GET", Path: "/apis/storage.k8s.io/v1/csinodes/n1"}},
		{"token", &authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"}},
			func(cs *kubeapi.Clientset) (runtime.Object, error) {
				return cs.ServiceAccounts("ns").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
					Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
			}, request{Method: "POST", Path: "/api/v1/namespaces/ns/serviceaccounts/default/token", ContentType: "application/json"}},
		{"review", &authorizationv1.SubjectAccessReview{TypeMeta: metav1.TypeMeta{Kind: "SubjectAccessReview", APIVersion: "authorization.k8s.io/v1"},
			Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}},
			func(cs *kubeapi.Clientset) (runtime.Object, error) {
				return cs.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{}, metav1.CreateOptions{})
			}, request{Method: "POST", Path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", ContentType: "application/json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, seen := fakeAPI(t, func(*http.Request) any { return tc.reply })
			got, err := tc.call(cs)
			require.NoError(t, err)
			require.Len(t, *seen, 1)
			rq := (*seen)[0]
			if tc.want.Body == nil {
				rq.Body = nil
			}
			assert.Equal(t, tc.want, rq)
			gotKind := got.GetObjectKind().GroupVersionKind().Kind
			wantKind := tc.reply.(runtime.Object).GetObjectKind().GroupVersionKind().Kind
			assert.Contains(t, []string{"", wantKind}, gotKind, "decoded into the reply's type")
			if sar, ok := got.(*authorizationv1.SubjectAccessReview); ok {
				assert.True(t, sar.Status.Allowed, "the answer, decoded")
			}
		})
	}
}

func TestDeleteSendsItsOptions(t *testing.T) {
	cs, seen := fakeAPI(t, func(*http.Request) any {
		return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}
	})
	err := cs.Pods("ns").Delete(context.Background(), "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("u1"))}})
	require.NoError(t, err)
	require.Len(t, *seen, 1)
	rq := (*seen)[0]
	assert.Equal(t, "DELETE", rq.Method)
	assert.Equal(t, "/api/v1/namespaces/ns/pods/web", rq.Path)
	assert.Equal(t, float64(0), rq.Body["gracePeriodSeconds"])
	assert.Equal(t, map[string]any{"uid": "u1"}, rq.Body["preconditions"])
}

func TestNewRequiresAConfigAndAClient(t *testing.T) {
	_, err := kubeapi.New(nil, nil)
	assert.EqualError(t, err, "kubeapi: New: a rest.Config and an http.Client are required")
	_, err = kubeapi.New(&rest.Config{QPS: 5}, http.DefaultClient)
	assert.EqualError(t, err, "kubeapi: New: Burst must be positive with QPS 5 and no RateLimiter")
}

// QPS and Burst limit the client, all groups together, as client-go's
// clientset: a request to one group waits behind another's.
func TestOneRateLimitForAllGroups(t *testing.T) {
	cs := serving(t, rest.Config{QPS: 0.001, Burst: 1}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := cs.Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err, "the burst's one request")
	_, err = cs.Leases("kube-node-lease").Get(ctx, "n1", metav1.GetOptions{})
	// client-go's limiter fails at once a wait that would pass the deadline.
	assert.ErrorContains(t, err, "rate: Wait(n=1) would exceed context deadline")
}

// The API server's Status answers are client-go's errors: apierrors'
// predicates work on them.
func TestAnErrorStatusIsAnAPIError(t *testing.T) {
	cs := serving(t, rest.Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
			Message: `pods "web" not found`})
	})
	_, err := cs.Pods("ns").Get(context.Background(), "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.EqualError(t, err, `pods "web" not found`)
}

// The event sink writes each event into its own namespace: creates and the
// recorder's strategic merge patches.
func TestEventSinkWritesIntoTheEventsNamespace(t *testing.T) {
	ev := &v1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "ns"}}
	cs, seen := fakeAPI(t, func(*http.Request) any { return ev })
	sink := kubeapi.EventSink{Client: cs}
	_, err := sink.Create(context.Background(), ev)
	require.NoError(t, err)
	_, err = sink.Patch(context.Background(), ev, []byte(`{"count":2}`))
	require.NoError(t, err)
	require.Len(t, *seen, 2)
	assert.Equal(t, request{Method: "POST", Path: "/api/v1/namespaces/ns/events", ContentType: "application/json"},
		request{Method: (*seen)[0].Method, Path: (*seen)[0].Path, ContentType: (*seen)[0].ContentType})
	assert.Equal(t, "PATCH /api/v1/namespaces/ns/events/web.1 application/strategic-merge-patch+json",
		(*seen)[1].Method+" "+(*seen)[1].Path+" "+(*seen)[1].ContentType)
	assert.Equal(t, map[string]any{"count": float64(2)}, (*seen)[1].Body)
}

// Clientsets that share their codecs (hollow nodes: one per node) cost
// only their REST clients; each with codecs of its own also builds a
// scheme (-benchmem's B/op).
func BenchmarkNewClientset(b *testing.B) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", QPS: 50, Burst: 100}
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(b, err)
	shared := kubeapi.NewCodecs()
	for _, bc := range []struct {
		name string
		opts []kubeapi.Option
	}{{"own-codecs", nil}, {"shared-codecs", []kubeapi.Option{kubeapi.WithCodecs(shared)}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := kubeapi.New(cfg, hc, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestSharedCodecsKnowTheGroups(t *testing.T) {
	codecs := kubeapi.NewCodecs()
	for _, obj := range []runtime.Object{&v1.Pod{}, &coordinationv1.Lease{}, &storagev1.CSINode{},
		&authenticationv1.TokenReview{}, &authorizationv1.SubjectAccessReview{}} {
		gvks, _, err := codecs.Scheme().ObjectKinds(obj)
		require.NoError(t, err)
		assert.NotEmpty(t, gvks)
	}
	lease := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"n1"},"spec":{"holderIdentity":"n1"}}`))
	}
	for range 2 { // two Clientsets on the same codecs
		cs := serving(t, rest.Config{}, lease, kubeapi.WithCodecs(codecs))
		l, err := cs.Leases("kube-node-lease").Get(context.Background(), "n1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "n1", *l.Spec.HolderIdentity)
	}
}
