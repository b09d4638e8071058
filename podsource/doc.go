// Package podsource brings pods to a node from the kubelet's sources and
// merges them into one stream, with the semantics of the kubelet's
// pkg/kubelet/config (config.go, file.go, http.go, common.go).
//
//   - FileSource: a directory of manifests (--pod-manifest-path) or one
//     file, watched with fsnotify and re-read every CheckPeriod (20s).
//   - URLSource: a URL (--manifest-url) polled every CheckPeriod (20s).
//   - PushHandler: an http.Handler to mount on your own server: POST a Pod
//     manifest, DELETE ?namespace=&name=.
//   - apiserver.Source (package podsource/apiserver, so that only its users
//     compile client-go): the pods bound to the node in the API server.
//
// Pods from files, URLs and pushes get the API's and the kubelet's defaults
// (SetAPIDefaults, ApplyKubeletDefaults, a PodUID when they have none) and
// are then validated (ValidatePod, a subset of the API server's rules, each
// error with its field path and value).
//
// Sources send PodUpdates to a Sink; *Mux is the Sink. Per source and in
// this order it emits REMOVE, ADD, UPDATE, DELETE and RECONCILE, each only
// for a semantic change (the kubelet's podsDifferSemantically). The mux is
// passive: Update merges and sends before it returns, so a slow consumer
// slows the sources. Pods in the stream are shared: neither consumers nor
// sources may modify them. Pod GC must wait for AllSourcesReady.
//
// Deliberate differences from the kubelet, detailed on the types:
//
//   - a static pod's metadata.uid must be a UID package podpath accepts;
//     the kubelet takes it as written (ValidatePod);
//   - UIDs hash the pod's JSON, not a spew dump: a node moved from the
//     kubelet sees its static pods' UIDs change once (PodUID);
//   - a manifest file that becomes invalid or empty, or a PodList item of
//     the URL that becomes invalid, keeps its last good pod; the kubelet
//     drops it (FileSource, URLSource);
//   - two pods with one namespace/name are not merged: the first keeps it,
//     the other is held back (Mux.Conflicts, FileSource.Errors).
//
// Use:
//
//	metrics := podsource.NewMetrics() // register with your registry
//	mux := podsource.NewMux(podsource.MuxConfig{Log: log, Metrics: metrics})
//	files, _ := podsource.NewFileSource(podsource.FileConfig{NodeName: node, Log: log, Metrics: metrics}, mux)
//	api, _ := apiserver.New(apiserver.Config{Client: client, NodeName: node, Log: log, Metrics: metrics}, mux) // a kubeapi.Interface
//	mux.Register(files.Name(), api.Name())
//	go files.Run(ctx)
//	go api.Run(ctx)
//	for u := range mux.Updates() { // never closed: the mux outlives its sources
//		// dispatch u.Op for u.Pods; GC only once mux.AllSourcesReady().
//	}
package podsource
