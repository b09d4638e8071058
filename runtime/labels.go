package runtime

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
	sandboxContainerName             = "POD"
)

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

func sandboxLabels(pod *v1.Pod) map[string]string {
	l := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		l[k] = v
	}
	l[LabelPodName] = pod.Name
	l[LabelPodNamespace] = pod.Namespace
	l[LabelPodUID] = string(pod.UID)
	return l
}

func containerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
	}
}

func containerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) map[string]string {
	a := make(map[string]string, len(c.Ports)+8)
	a[AnnotationContainerHash] = strconv.FormatUint(HashContainer(c), 16)
	a[AnnotationRestartCount] = strconv.Itoa(restartCount)
	a[AnnotationTerminationMessagePath] = c.TerminationMessagePath
	a[AnnotationTerminationMsgPolicy] = string(c.TerminationMessagePolicy)
	if pod.DeletionGracePeriodSeconds != nil {
		a[AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[AnnotationPodTerminationGrace] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if b, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[AnnotationPreStopHandler] = string(b)
		}
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			a[AnnotationContainerPorts] = string(b)
		}
	}
	return a
}

// labelInfo is what the manager reads back from a container's labels and
// annotations.
type labelInfo struct {
	podName, podNamespace string
	podUID                types.UID
	containerName         string
	hash                  uint64
	restartCount          int
	gracePeriod           *int64
	preStop               *v1.LifecycleHandler
}

func readLabels(labels, annotations map[string]string) labelInfo {
	li := labelInfo{
		podName:       labels[LabelPodName],
		podNamespace:  labels[LabelPodNamespace],
		podUID:        types.UID(labels[LabelPodUID]),
		containerName: labels[LabelContainerName],
	}
	li.hash, _ = strconv.ParseUint(annotations[AnnotationContainerHash], 16, 64)
	li.restartCount, _ = strconv.Atoi(annotations[AnnotationRestartCount])
	for _, k := range []string{AnnotationPodDeletionGracePeriod, AnnotationPodTerminationGrace} {
		if v, ok := annotations[k]; ok {
			if g, err := strconv.ParseInt(v, 10, 64); err == nil {
				li.gracePeriod = &g
				break
			}
		}
	}
	if v, ok := annotations[AnnotationPreStopHandler]; ok {
		var h v1.LifecycleHandler
		if json.Unmarshal([]byte(v), &h) == nil {
			li.preStop = &h
		}
	}
	return li
}
