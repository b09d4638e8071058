package kuberuntime

import (
	"encoding/json"
	"strconv"

	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

func sandboxLabels(pod *v1.Pod, extra map[string]string) map[string]string {
	l := make(map[string]string, len(pod.Labels)+len(extra)+3)
	for k, v := range pod.Labels {
		l[k] = v
	}
	for k, v := range extra {
		l[k] = v
	}
	l[kc.LabelPodName] = pod.Name
	l[kc.LabelPodNamespace] = pod.Namespace
	l[kc.LabelPodUID] = string(pod.UID)
	return l
}

func containerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		kc.LabelPodName:       pod.Name,
		kc.LabelPodNamespace:  pod.Namespace,
		kc.LabelPodUID:        string(pod.UID),
		kc.LabelContainerName: c.Name,
	}
}

func containerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) map[string]string {
	a := make(map[string]string, len(c.Ports)+8)
	a[kc.AnnotationContainerHash] = strconv.FormatUint(kc.HashContainer(c), 16)
	a[kc.AnnotationRestartCount] = strconv.Itoa(restartCount)
	a[kc.AnnotationTerminationMessagePath] = c.TerminationMessagePath
	a[kc.AnnotationTerminationMsgPolicy] = string(c.TerminationMessagePolicy)
	if pod.DeletionGracePeriodSeconds != nil {
		a[kc.AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[kc.AnnotationPodTerminationGrace] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if b, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[kc.AnnotationPreStopHandler] = string(b)
		}
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			a[kc.AnnotationContainerPorts] = string(b)
		}
	}
	return a
}
