package serverauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/server/serverauth"
)

// A node without an API server: anonymous callers, everything allowed
// (the kubelet's standalone settings); with one, leave the defaults and
// pass the clients.
func Example() {
	auth, err := serverauth.New(serverauth.Config{NodeName: "node-1",
		Authentication: kubeletconfig.KubeletAuthentication{
			Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(true)},
			Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(false)}},
		Authorization: kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow}})
	if err != nil {
		panic(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "pods") })
	w := httptest.NewRecorder()
	auth.Filter(api).ServeHTTP(w, httptest.NewRequest("GET", "/pods", nil))
	fmt.Println(w.Code, w.Body)

	_, err = serverauth.New(serverauth.Config{NodeName: "node-1"})
	fmt.Println(err)
	// Output:
	// 200 pods
	// serverauth: authentication.webhook.enabled needs an API server (no TokenReviews client)
}
