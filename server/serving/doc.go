// Package serving serves a node's API handlers as the kubelet does: the
// API on --port over TLS behind authentication and authorization
// (server/serverauth), the read-only port without either, and a plain
// healthz. It is apart from nodeagent because an agent that does not
// serve (hollow nodes) need not compile serverauth and the TLS serving. A node without an API server passes its Port settings
// through Standalone first: webhook defaults give way to the kubelet's
// standalone ones, on loopback.
//
//	servers, err := serving.Listen(serving.Config{Address: "0.0.0.0", Port: 10250,
//		HealthzAddress: "127.0.0.1", HealthzPort: 10248,
//		Auth: serverauth.Config{NodeName: "n1", Authentication: authn, Authorization: authz,
//			TokenReviews: client.TokenReviews(), SubjectAccessReviews: client.SubjectAccessReviews()},
//		API: agent.APIHandler(), ReadOnly: agent.ReadOnlyHandler(), Healthz: agent.APIHandler().Healthz()})
//	if err != nil {
//		return err
//	}
//	go servers.Run(ctx)
package serving
