// Package serverauth secures the node's API as the kubelet secures port
// 10250: TLS with the given or a self-signed serving certificate,
// authentication by x509 client certificates (--client-ca-file), bearer
// tokens through the API server's TokenReview (--authentication-token-webhook)
// and, if enabled, anonymous requests; authorization by
// SubjectAccessReview (--authorization-mode=Webhook) or AlwaysAllow.
//
// Authentication and authorization behave as k8s.io/apiserver's delegating
// implementations, the ones the kubelet uses: the first of x509, bearer
// token and WebSocket token that knows the caller wins (system:authenticated
// added), credentials that fail are refused even with anonymous on; the
// caches (token answers 2m, allowed 5m, denied 30s) and webhook back-off are
// theirs. A request is
// authorized as verb <method's API verb> on nodes/<subresource> named after
// the node, with the kubelet's fine-grained mapping (KubeletFineGrainedAuthz,
// GA in v1.36): /stats → stats, /metrics → metrics, /logs → log, /spec →
// spec, /checkpoint → checkpoint; /pods and /runningpods → pods,
// /healthz → healthz, /configz → configz, each falling back to proxy;
// anything else (exec, attach, portForward, containerLogs, run) → proxy.
// Refusals carry the kubelet's bodies: 401 "Unauthorized", 403
// "Forbidden (user=…, verb=…, resource=nodes, subresource(s)=[…])".
//
// Defaults are KubeletConfiguration v1beta1's (anonymous off, webhook
// authentication on, authorization Webhook), so a node without an API
// server must say so (webhook off, AlwaysAllow) or New refuses, as the
// kubelet does.
//
// Deliberate deviation: the package is written over client-go's
// TokenReview and SubjectAccessReview clients instead of importing
// k8s.io/apiserver, whose delegating authenticator brings CEL, OpenTelemetry
// and component-base into the agent: some 30 MB of binary and 9 MiB of
// resident memory on every node (#34). The client CA bundle is read again
// when it changes, within 10s (the apiserver's loader watches the file).
// It is still apart from package server: an agent that serves its API
// unauthenticated on loopback needs none of it.
//
// # Use
//
//	auth, err := serverauth.New(serverauth.Config{NodeName: node,
//		Authentication: cfg.Authentication, Authorization: cfg.Authorization,
//		TokenReviews: client.TokenReviews(), SubjectAccessReviews: client.SubjectAccessReviews()})
//	go auth.Run(ctx) // reloads the client CA
//	tlsCfg, err := serverauth.TLSConfig(serverauth.TLSOptions{CertDir: "/var/lib/kubelet/pki", Hostname: node})
//	srv := &http.Server{Handler: auth.Filter(api), TLSConfig: tlsCfg}
package serverauth
