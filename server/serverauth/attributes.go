package serverauth

import (
	"net/http"
	"strings"
)

// The API server's names for the groups and user of requests.
const (
	GroupAuthenticated   = "system:authenticated"
	GroupUnauthenticated = "system:unauthenticated"
	UserAnonymous        = "system:anonymous"
)

// User is who sent a request, as the API server's user.Info: a client
// certificate's CN and O, a TokenReview's answer, or system:anonymous.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Attributes are what a request is authorized as: a SubjectAccessReview's
// resource attributes (cluster-scoped, core group) for User.
type Attributes struct {
	User        User
	Verb        string
	APIVersion  string
	Resource    string
	Subresource string
	Name        string
	Path        string
}

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

// RequestAttributes are what authorizing r takes: the kubelet's mapping of
// the request to verb <method's API verb> on nodes/<subresource> named
// nodeName, first the fine-grained subresource then, where the kubelet
// falls back, nodes/proxy. Any one allowed lets the request through.
func RequestAttributes(nodeName string, u User, r *http.Request) []Attributes {
	base := Attributes{User: u, Verb: apiVerb(r.Method), APIVersion: "v1", Resource: "nodes",
		Subresource: "proxy", Name: nodeName, Path: r.URL.Path}
	for _, s := range subresources {
		if !isSubpath(r.URL.Path, s.path) {
			continue
		}
		fine := base
		fine.Subresource = s.subresource
		if !s.fallback {
			return []Attributes{fine}
		}
		return []Attributes{fine, base}
	}
	return []Attributes{base}
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
