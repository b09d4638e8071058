package main

import (
	"net"

	nodeserving "github.com/nodekit-dev/nodekit/server/serving"
)

// listen binds the node's servers (nodekit's server/serving): the API on
// --port with TLS and authentication/authorization, the read-only API,
// healthz. Without --kubeconfig, the serving flags' Finish has left no
// webhook.
func (a *agent) listen() (*nodeserving.Servers, error) {
	sc := a.cfg.serving.Config(a.cfg.hostname, net.ParseIP(a.cfg.hostIP))
	sc.Auth.Log, sc.Log, sc.Registerer = a.log.WithName("auth"), a.log.WithName("serving"), a.registry
	if a.cluster != nil {
		sc.Auth.TokenReviews, sc.Auth.SubjectAccessReviews = a.cluster.Client.TokenReviews(), a.cluster.Client.SubjectAccessReviews()
	}
	sc.API, sc.ReadOnly, sc.Healthz = a.APIHandler(), a.ReadOnlyHandler(), a.APIHandler().Healthz()
	return nodeserving.Listen(sc)
}
