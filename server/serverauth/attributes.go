package serverauth

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// subresources maps path prefixes to the nodes/<subresource> a caller
// needs, as the kubelet with KubeletFineGrainedAuthz (GA in v1.36). For
// those marked fallback, nodes/proxy is asked when the fine-grained one is
// denied; everything else is nodes/proxy.
var subresources = []struct {
	path, subresource string
	fallback          bool
}{
	{"/stats", "stats", false},
	{"/metrics", "metrics", false},
	{"/logs", "log", false},
	{"/spec", "spec", false},
	{"/checkpoint", "checkpoint", false},
	{"/pods", "pods", true},
	{"/runningpods", "pods", true},
	{"/healthz", "healthz", true},
	{"/configz", "configz", true},
}

// Attributes are what authorizing r takes: the kubelet's mapping of the
// request to verb <method's API verb> on nodes/<subresource> named
// nodeName, first the fine-grained subresource then, where the kubelet
// falls back, nodes/proxy. Any one allowed lets the request through.
func Attributes(nodeName string, u user.Info, r *http.Request) []authorizer.Attributes {
	base := authorizer.AttributesRecord{User: u, Verb: apiVerb(r.Method), APIVersion: "v1", Resource: "nodes",
		Subresource: "proxy", Name: nodeName, ResourceRequest: true, Path: r.URL.Path}
	for _, s := range subresources {
		if !isSubpath(r.URL.Path, s.path) {
			continue
		}
		fine := base
		fine.Subresource = s.subresource
		if !s.fallback {
			return []authorizer.Attributes{fine}
		}
		return []authorizer.Attributes{fine, base}
	}
	return []authorizer.Attributes{base}
}

// isSubpath: p is dir or below it.
func isSubpath(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func apiVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}
