package podsource

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Op is the kind of a PodUpdate, with the kubelet's names.
type Op string

// The kubelet's operations (pkg/kubelet/types.PodOperation).
const (
	// SET is a source's full set of pods. Sources send it; the mux emits it
	// only in ModeSnapshot, with every pod of every source.
	SET Op = "SET"
	// ADD: pods new to the stream.
	ADD Op = "ADD"
	// UPDATE: pods whose spec, labels, annotations (other than the local
	// config.seen/config.source/config.mirror) or generation changed.
	UPDATE Op = "UPDATE"
	// DELETE: pods that got a deletion timestamp (graceful delete; API
	// source only in the kubelet).
	DELETE Op = "DELETE"
	// REMOVE: pods gone from their source.
	REMOVE Op = "REMOVE"
	// RECONCILE: pods whose only change is in status.
	RECONCILE Op = "RECONCILE"
)

// Source kinds, the values of the kubernetes.io/config.source annotation.
const (
	SourceFile = "file"
	SourceHTTP = "http"
	SourceAPI  = "api"
)

// Annotations the kubelet sets on pods that come from its sources.
const (
	ConfigHashAnnotation      = "kubernetes.io/config.hash"
	ConfigSourceAnnotation    = "kubernetes.io/config.source"
	ConfigSeenAnnotation      = "kubernetes.io/config.seen"
	ConfigMirrorAnnotation    = "kubernetes.io/config.mirror"
	DefaultManifestPath       = "/etc/kubernetes/manifests"
	DefaultFileCheckFrequency = 20e9 // 20s, --file-check-frequency
	DefaultHTTPCheckFrequency = 20e9 // 20s, --http-check-frequency
)

// PodUpdate is one message of a pod stream: pods that a source added,
// changed or removed, or a source's full set (SET).
type PodUpdate struct {
	Op     Op
	Pods   []*v1.Pod
	Source string
}

// Sink receives the updates of sources. *Mux implements it. Update may block
// (back-pressure from the consumer of the mux) until ctx ends.
type Sink interface {
	Update(ctx context.Context, u PodUpdate) error
}

// Source is what every source here is: FileSource, URLSource, PushHandler
// and apiserver.Source. Run sends to the Sink until ctx ends and returns
// nil; Name is what the Mux registers and reports.
type Source interface {
	Run(ctx context.Context) error
	Name() string
}

var (
	_ Source = (*FileSource)(nil)
	_ Source = (*URLSource)(nil)
	_ Source = (*PushHandler)(nil)
)

// ManifestError is a manifest that could not be used: it names where it came
// from (file path, URL, "push") and, for validation errors, each field path
// with its value.
type ManifestError struct {
	// Origin is the file path, URL or request that carried the manifest.
	Origin string
	// Fields are validation or strict-decoding errors, each with its path.
	Fields field.ErrorList
	// Err is a decoding error that has no field path (bad YAML/JSON).
	Err error
}

func (e *ManifestError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("podsource: invalid manifest %s: %v", e.Origin, e.Err)
	}
	return fmt.Sprintf("podsource: invalid manifest %s: %v", e.Origin, e.Fields.ToAggregate())
}

func (e *ManifestError) Unwrap() error { return e.Err }

// FullName is the pod's "namespace/name", the kubelet's pod full name key.
func FullName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
