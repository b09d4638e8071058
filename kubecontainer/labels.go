package kubecontainer

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	"github.com/davecgh/go-spew/spew"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels and annotations the kubelet puts on sandboxes and containers
// (pkg/kubelet/types/labels.go, pkg/kubelet/kuberuntime/labels.go). Using the
// same keys lets tools built for the kubelet read what this manager creates.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	AnnotationContainerHash          = "io.kubernetes.container.hash"
	AnnotationRestartCount           = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMsgPolicy   = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPreStopHandler         = "io.kubernetes.container.preStopHandler"
	AnnotationContainerPorts         = "io.kubernetes.container.ports"
	AnnotationPodDeletionGracePeriod = "io.kubernetes.pod.deletionGracePeriod"
	AnnotationPodTerminationGrace    = "io.kubernetes.pod.terminationGracePeriod"
)

// SandboxContainerName is the name a sandbox takes when listed as a container.
const SandboxContainerName = "POD"

// HashContainer is the kubelet's container hash (since v1.31): FNV-32a over
// the JSON of the fields whose change requires a restart, which are only the
// name and the image; other edits of a running container are either
// forbidden by the API or applied in place.
func HashContainer(c *v1.Container) uint64 {
	b, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	h := fnv.New32a()
	// The kubelet hashes through hashutil.DeepHashObject, i.e. spew's %#v;
	// same printer config here so the values equal the kubelet's.
	hashPrinter.Fprintf(h, "%#v", b)
	return uint64(h.Sum32())
}

var hashPrinter = spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}

// LabelInfo is what a kubelet reads back from a container's labels and
// annotations.
type LabelInfo struct {
	PodName, PodNamespace string
	PodUID                types.UID
	ContainerName         string
	Hash                  uint64
	RestartCount          int
	GracePeriod           *int64
	PreStop               *v1.LifecycleHandler
}

// ReadLabels parses the labels and annotations SyncPod sets.
func ReadLabels(labels, annotations map[string]string) LabelInfo {
	li := LabelInfo{
		PodName:       labels[LabelPodName],
		PodNamespace:  labels[LabelPodNamespace],
		PodUID:        types.UID(labels[LabelPodUID]),
		ContainerName: labels[LabelContainerName],
	}
	li.Hash, _ = strconv.ParseUint(annotations[AnnotationContainerHash], 16, 64)
	li.RestartCount, _ = strconv.Atoi(annotations[AnnotationRestartCount])
	for _, k := range []string{AnnotationPodDeletionGracePeriod, AnnotationPodTerminationGrace} {
		if v, ok := annotations[k]; ok {
			if g, err := strconv.ParseInt(v, 10, 64); err == nil {
				li.GracePeriod = &g
				break
			}
		}
	}
	if v, ok := annotations[AnnotationPreStopHandler]; ok {
		var h v1.LifecycleHandler
		if json.Unmarshal([]byte(v), &h) == nil {
			li.PreStop = &h
		}
	}
	return li
}
