// Package apiserver is the API-server pod source for package podsource: a
// client-go Reflector lists and watches the pods bound to one node
// (field selector spec.nodeName=<node>) into an UndeltaStore and sends the
// full set to a podsource.Sink (the Mux) on every change, as the kubelet's
// pkg/kubelet/config/apiserver.go does. The Reflector resumes a broken watch
// from its last resource version and lists again after a 410 "too old
// resource version". API pods keep their UID, name and namespace and only
// get the annotation kubernetes.io/config.source=api: no kubelet defaults,
// no validation. The node's own credentials (system:node:<node>) suffice
// under the Node authorizer.
//
// Deviation: while the API server fails, the Reflector retries at most
// 10 s apart (kubeapi.WatchBackoff) rather than the kubelet's [30, 60) s,
// so that a pod created just after an outage starts within seconds.
//
// It is its own package so that agents using only the file, URL and push
// sources do not compile client-go.
//
//	client := kubernetes.NewForConfigOrDie(nodeCredentials)
//	src, err := apiserver.New(apiserver.Config{Client: client, NodeName: node}, mux)
//	mux.Register(src.Name())
//	go src.Run(ctx)
package apiserver
