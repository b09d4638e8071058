package kubeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

func Example() {
	// An API server that knows one pod.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Status: v1.PodStatus{Phase: v1.PodRunning}})
	}))
	defer srv.Close()

	cfg := &rest.Config{Host: srv.URL}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		panic(err)
	}
	var client kubeapi.Interface
	client, err = kubeapi.New(cfg, httpClient)
	if err != nil {
		panic(err)
	}
	pod, err := client.Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	fmt.Println(pod.Name, pod.Status.Phase, err)
	// Output: web Running <nil>
}
