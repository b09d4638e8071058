// Package podsource brings pods to a node from the kubelet's sources
// and merges them into one stream, with the semantics of the
// kubelet's pkg/kubelet/config (config.go, file.go, http.go, common.go).
//
// # Sources
//
//   - FileSource: a directory of manifests (default /etc/kubernetes/manifests)
//     or a single file; YAML or JSON, one Pod per file; dotfiles ignored,
//     subdirectories not recursed into. Changes are seen at once through
//     fsnotify, and every CheckPeriod (20s, --file-check-frequency) all files
//     are re-read as a safety net (lost events, a directory that did not
//     exist yet). Adding, editing (in place, or an editor writing a temp
//     file and renaming it over) and removing a file adds, changes and
//     removes its pod. Symlinks are followed; for a link pointing outside
//     the directory the target's directory is watched too, so edits of the
//     target and link swaps are seen at once. A path that holds no manifest
//     (an empty file, a dangling symlink, a directory, a symlink loop, a
//     file over MaxFileBytes, 10 MiB) is logged once with its path when it
//     gets that way, not at every re-read.
//   - URLSource: a URL (--manifest-url) polled every CheckPeriod (20s,
//     --http-check-frequency) with optional headers; the body is a Pod or a
//     PodList, YAML or JSON. A failed fetch or an unusable body keeps the
//     last good set; an empty body is an empty set (as the kubelet).
//   - PushHandler: an http.Handler to mount on your own server: POST a Pod
//     manifest to add or replace it, DELETE ?namespace=&name= to remove it;
//     413 over MaxBodyBytes, 400 with the field errors for a bad manifest.
//   - apiserver.Source (subpackage podsource/apiserver, so that only its
//     users compile client-go): the pods bound to the node in the API server, as the
//     kubelet's config/apiserver.go: a client-go Reflector lists and watches
//     pods with the field selector spec.nodeName=<node> into an
//     UndeltaStore, and each change sends the full set (SET). The Reflector
//     resumes a broken watch from its last resource version and lists again
//     after a 410 "too old resource version". Its pods keep their API UID,
//     name and namespace, get no kubelet defaults and no validation, only
//     the annotation config.source "api". The node's own credentials
//     (system:node:<node>) suffice under the Node authorizer. Its
//     integration tests run against a real kube-apiserver started by
//     hack/apiserver-up.sh.
//
// Every pod from the file, URL and push sources gets the API defaults a
// static pod needs (SetAPIDefaults) and the kubelet's own (ApplyKubeletDefaults, the
// kubelet's applyDefaults): a UID hashed from the pod and its origin when it
// has none, the name suffixed with "-<lowercased node name>", namespace
// "default", spec.nodeName, the config.hash and config.source annotations,
// for files the NoExecute toleration, phase Pending; then it is validated
// (ValidatePod, a subset of the API server's rules, each error with its
// field path and value). Because a node puts a pod's UID, namespace and
// name in file paths, ValidatePod also requires metadata.uid to be a UID
// package podpath accepts (ASCII letters, digits and '-', at most 128
// characters: UUIDs and the kubelet's hex digests fit, "../x" does not)
// and <namespace>_<name>_<uid> to fit in a file name; the kubelet takes a
// static pod's UID as written, nodekit refuses the pod instead.
//
// # Mux
//
// Sources send PodUpdates to a Sink; *Mux is the Sink. A source sends its
// full set (SET) or deltas (ADD, UPDATE, DELETE, REMOVE); the mux keeps
// each source's pods by UID and emits, per source and in this order,
// REMOVE, ADD, UPDATE, DELETE and RECONCILE, each only if something changed
// semantically (the kubelet's podsDifferSemantically): an unchanged re-read
// emits nothing, a change only in status is a RECONCILE, a change in spec,
// labels, generation, deletion timestamp or annotations (except the local
// config.seen, config.source, config.mirror) an UPDATE (DELETE if a
// deletion timestamp is set), a pod gone a REMOVE. The first sight of a pod
// stamps config.seen (RFC3339Nano, from the injected clock) on the mux's
// shallow copy, unless its source stamped it (the API server source does,
// on its own objects); such a pod's RECONCILE is the source's newer object,
// which consumers may hold instead of the older one (the kubelet's pod
// manager does). Emitted pods are shared, never copied per consumer:
// consumers must not modify them. ModeSnapshot
// emits one SET of everything instead. SourcesReady/AllSourcesReady say
// whether the sources have delivered a first SET; pod GC must wait for it.
// A source's first SET with nothing to add emits an empty ADD, the
// kubelet's readiness signal.
//
// # Choices
//
//   - Editing a manifest without metadata.uid changes its content hash and
//     so its UID: the stream shows REMOVE of the old pod then ADD of the new
//     one, exactly what the kubelet does (a new UID is a new pod to the pod
//     workers). A manifest with metadata.uid keeps it, and an edit is an
//     UPDATE. The hash is md5 over the JSON of the decoded, API-defaulted pod
//     plus "host:<node>file:<path>" (files) or "url:<URL>" (others): stable
//     across restarts and independent of formatting, comments and of spelling
//     out API defaults; the values differ from the kubelet's (which hashes a
//     spew dump), so the UIDs of existing static pods change once when
//     moving a node from the kubelet to this package.
//   - A file that becomes invalid keeps the last good version of its pod
//     (the kubelet drops it): a typo during an edit must not kill a running
//     static pod, such as the kube-apiserver's. The error is logged with
//     the file and field path, counted in podsource_invalid_manifests_total
//     and listed by FileSource.Errors until the file is fixed or deleted.
//     Deleting the file removes the pod. A file that becomes empty (being
//     written, truncate then write) also keeps its last pod. The URL source
//     does the same per pod (keyed by namespace/name) when an item of its
//     PodList becomes invalid; valid items keep flowing.
//   - The same namespace/name from two pods of two sources is not merged:
//     the first pod seen keeps it, the other is held back, logged,
//     counted in podsource_conflicts_total and listed by Mux.Conflicts.
//     When the kept pod goes away, the first held-back pod (in source
//     registration order) is added in its latest version. Two files of the
//     file source with one namespace/name or one UID are settled by the file
//     source, which knows the paths: the file whose pod was sent first
//     keeps it (on a first read, the first by path), the other is held
//     back, logged once with both paths, counted, and listed by
//     FileSource.Errors until the conflict ends.
//   - The mux is passive: Update merges and sends before it returns, so the
//     stream's order is the merge order and a slow consumer slows the
//     sources. No lock of the merged state is held across a send: the
//     consumer may call the mux (AllSourcesReady, UIDs) between reads while
//     sources wait. Pods in the stream are shared, read-only; sources must
//     not modify pods they sent (they may send the same pointer again: the
//     mux then skips the pod without comparing).
//   - Strict decoding (the Strict options) rejects unknown and duplicate
//     fields with their paths (sigs.k8s.io/json); by default unknown fields
//     are ignored, as the kubelet does.
//   - Validation runs after defaulting, as in the kubelet, so a bad name is
//     reported with the node suffix.
//   - The push source's pods live in memory: after a restart they must be
//     pushed again (it is ready as soon as Run starts).
//
// # Use
//
//	metrics := podsource.NewMetrics() // register with your registry
//	mux := podsource.NewMux(podsource.MuxConfig{Log: log, Metrics: metrics})
//	files, _ := podsource.NewFileSource(podsource.FileConfig{NodeName: node, Log: log, Metrics: metrics}, mux)
//	url, _ := podsource.NewURLSource(podsource.URLConfig{URL: u, NodeName: node, Log: log, Metrics: metrics}, mux)
//	push, _ := podsource.NewPushHandler(podsource.PushConfig{NodeName: node, Log: log, Metrics: metrics}, mux)
//	api, _ := apiserver.New(apiserver.Config{Client: clientset, NodeName: node, Log: log, Metrics: metrics}, mux)
//	mux.Register(files.Name(), url.Name(), push.Name(), api.Name())
//	go api.Run(ctx)
//	go files.Run(ctx)
//	go url.Run(ctx)
//	go push.Run(ctx)
//	http.Handle("/pods", push) // behind your authentication
//	for {
//		select {
//		case u := <-mux.Updates(): // the mux outlives its sources: never closed
//			// dispatch u.Op for u.Pods; GC only once mux.AllSourcesReady().
//		case <-ctx.Done():
//			return
//		}
//	}
package podsource
