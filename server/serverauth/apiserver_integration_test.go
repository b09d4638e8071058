//go:build integration

package serverauth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/server/serverauth"
)

// Against the real kube-apiserver, with the node's own credentials for
// the webhooks (the Node authorizer lets a node create TokenReviews and
// SubjectAccessReviews): the admin's token is authenticated and, being in
// system:masters, allowed to exec; an unknown token is refused; the node's
// own identity has no nodes/proxy (RBAC's system:node role) and is
// refused exec.
func TestFilterAgainstTheAPIServer(t *testing.T) {
	api := testenv.NeedAPIServer(t)
	node := testenv.KubeAPI(t, api.NodeConfig)
	auth, err := serverauth.New(serverauth.Config{NodeName: api.Node,
		TokenReviews: node.TokenReviews(), SubjectAccessReviews: node.SubjectAccessReviews()})
	require.NoError(t, err)
	call := func(token string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, "/exec/default/p/c", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		auth.Filter(ok).ServeHTTP(w, r)
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	code, body := call(api.AdminConfig.BearerToken)
	assert.Equal(t, 200, code, body)
	code, _ = call("not-a-token-the-apiserver-knows")
	assert.Equal(t, 401, code)
	code, body = call(api.NodeConfig.BearerToken)
	assert.Equal(t, 403, code)
	assert.Equal(t, "Forbidden (user=system:node:"+api.Node+", verb=create, resource=nodes, subresource(s)=[proxy])", body)
}
