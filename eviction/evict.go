package eviction

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit-dev/nodekit/resources"
)

// Reason is the evicted pod's status.reason, the admission refusal's
// reason and the pod event's reason.
const Reason = "Evicted"

// ImmediateGracePeriodSeconds is the kubelet's
// immediateEvictionGracePeriodSeconds: how long a pod evicted for a hard
// threshold or its local storage gets to stop.
const ImmediateGracePeriodSeconds = 1

// The signals a local-storage eviction is counted under (the kubelet's
// metrics label).
const (
	SignalEmptyDirFsLimit           = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
)

// Event annotation keys, as the kubelet's.
const (
	OffendingContainersKey      = "offending_containers"
	OffendingContainersUsageKey = "offending_containers_usage"
	OffendingPodKey             = "offending_pod"
	OffendingPodUsageKey        = "offending_pod_usage"
	StarvedResourceKey          = "starved_resource"
)

// Eviction is the decision to evict one pod, for its PodKiller.
type Eviction struct {
	Pod *v1.Pod
	// Signal is the threshold's signal, or one of the local-storage
	// limits (SignalEmptyDirFsLimit, ...).
	Signal string
	// GracePeriodSeconds overrides the pod's terminationGracePeriodSeconds
	// (the kubelet's pod workers never go below 1 second).
	GracePeriodSeconds int64
	// Message is the status message and the event's, as the kubelet's.
	Message string
	// Annotations go on the pod's Evicted event (offending containers,
	// their usage, the starved resource); nil for local-storage evictions.
	Annotations map[string]string
	// Condition is DisruptionTarget (reason TerminationByKubelet) for
	// threshold evictions; nil for local-storage ones.
	Condition *v1.PodCondition
	// Time is when it was decided.
	Time time.Time
}

// UpdateStatus makes status the evicted pod's, as the kubelet's eviction
// manager does in the status function it gives killPod: phase Failed,
// reason Evicted, the message, and the DisruptionTarget condition (its
// transition time kept when its status does not change).
func (e Eviction) UpdateStatus(status *v1.PodStatus) {
	status.Phase = v1.PodFailed
	status.Reason = Reason
	status.Message = e.Message
	if e.Condition == nil {
		return
	}
	c := *e.Condition
	c.LastTransitionTime = metav1.NewTime(e.Time)
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			if status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = status.Conditions[i].LastTransitionTime
			}
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

// gracePeriod is the kubelet's override: 1 s for a hard threshold; for a
// soft one --eviction-max-pod-grace-period, capped by the pod's own
// terminationGracePeriodSeconds (v1.34, AllowOverwriteTerminationGracePeriodSeconds
// off by default).
func gracePeriod(t Threshold, pod *v1.Pod, maxPodGracePeriodSeconds int64) int64 {
	if t.Hard() {
		return ImmediateGracePeriodSeconds
	}
	g := maxPodGracePeriodSeconds
	if tg := pod.Spec.TerminationGracePeriodSeconds; tg != nil {
		g = min(g, *tg)
	}
	return g
}

// quantity formats an observed amount as the kubelet's observations hold
// it: bytes in binary SI, inodes and PIDs in decimal SI.
func quantity(signal string, v int64) string {
	format := resource.BinarySI
	if r := signalResource[signal]; r == ResourceInodes || r == ResourcePIDs {
		format = resource.DecimalSI
	}
	return resource.NewQuantity(v, format).String()
}

// thresholdQuantity formats a threshold's value for a capacity as the
// kubelet's GetThresholdQuantity returns it.
func thresholdQuantity(t *Threshold, capacity int64) string {
	if t.Value.Quantity != nil {
		return t.Value.Quantity.String()
	}
	return resource.NewQuantity(t.Value.Of(capacity), resource.BinarySI).String()
}

// thresholdEviction builds the eviction of pod to reclaim res, with the
// kubelet's message and event annotations (evictionMessage): the
// resource, the first threshold of act on it with its value and what is
// available, the pod's pod-level memory request when it sets one, and
// each container using more than its request.
func thresholdEviction(pod *v1.Pod, t Threshold, res v1.ResourceName, ts []Threshold, act []int, obs Observations,
	st *statsapi.PodStats, maxPodGracePeriodSeconds int64, now time.Time) Eviction {
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %v. ", res)
	for _, i := range act {
		if signalResource[ts[i].Signal] != res {
			continue
		}
		if o, ok := obs[ts[i].Signal]; ok {
			fmt.Fprintf(&b, "Threshold quantity: %v, available: %v. ", thresholdQuantity(&ts[i], o.Capacity),
				quantity(ts[i].Signal, o.Available))
			break
		}
	}
	e := Eviction{Pod: pod, Signal: t.Signal, GracePeriodSeconds: gracePeriod(t, pod, maxPodGracePeriodSeconds), Time: now,
		Annotations: map[string]string{}}
	if st != nil {
		if res == v1.ResourceMemory && podLevelSet(pod) {
			if req, ok := pod.Spec.Resources.Requests[res]; ok && st.Memory != nil {
				use := resource.NewQuantity(int64(ptrOr(st.Memory.WorkingSetBytes)), resource.BinarySI).String()
				fmt.Fprintf(&b, "Pod %s was using %s, request is %s, has larger consumption of %v. ", pod.Name, use, req.String(), res)
				e.Annotations[OffendingPodKey] = pod.Name
				e.Annotations[OffendingPodUsageKey] = use
			}
		}
		var names, usages []string
		for _, cs := range st.Containers {
			c := findContainer(pod, cs.Name)
			if c == nil {
				continue
			}
			var use *resource.Quantity
			switch res {
			case v1.ResourceEphemeralStorage:
				if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
					use = resource.NewQuantity(int64(*cs.Rootfs.UsedBytes+*cs.Logs.UsedBytes), resource.BinarySI)
				}
			case v1.ResourceMemory:
				if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
					use = resource.NewQuantity(int64(*cs.Memory.WorkingSetBytes), resource.BinarySI)
				}
			}
			req := c.Resources.Requests[res]
			if use != nil && use.Cmp(req) > 0 {
				fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %v. ", c.Name, use, req.String(), res)
				names = append(names, c.Name)
				usages = append(usages, use.String())
			}
		}
		e.Annotations[OffendingContainersKey] = strings.Join(names, ",")
		e.Annotations[OffendingContainersUsageKey] = strings.Join(usages, ",")
		e.Annotations[StarvedResourceKey] = string(res)
	}
	e.Message = b.String()
	e.Condition = &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation,
		Reason: v1.PodReasonTerminationByKubelet, Message: e.Message}
	return e
}

// findContainer finds a regular or init container by name (ephemeral
// containers have no resources and are never blamed).
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

func ptrOr(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// LocalStorageEvictions are the kubelet's localStorageEviction decisions
// (LocalStorageCapacityIsolation): each non-critical pod using more than
//   - an emptyDir's sizeLimit: "Usage of EmptyDir volume "cache" exceeds
//     the limit "1Gi". ",
//   - the sum of its containers' ephemeral-storage limits (its whole
//     ephemeral storage: writable layers, logs, emptyDirs): "Pod ephemeral
//     local storage usage exceeds the total limit of containers 2Gi. ",
//   - or, for a container, its ephemeral-storage limit (logs, and the
//     writable layer unless on a dedicated image filesystem): "Container
//     app exceeded its local ephemeral storage limit "1Gi". ",
//
// tested in that order, is evicted with a grace period of 1 s.
func LocalStorageEvictions(pods []*v1.Pod, stats PodStats, layout FsLayout, now time.Time) []Eviction {
	var out []Eviction
	for _, pod := range pods {
		st := stats.of(pod)
		if st == nil || resources.IsCriticalPod(pod) {
			continue
		}
		e := Eviction{Pod: pod, GracePeriodSeconds: ImmediateGracePeriodSeconds, Time: now}
		switch {
		case emptyDirOverLimit(pod, st, &e):
		case podOverLimit(pod, st, &e):
		case containerOverLimit(pod, st, layout, &e):
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

func emptyDirOverLimit(pod *v1.Pod, st *statsapi.PodStats, e *Eviction) bool {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Sign() != 1 {
			continue
		}
		for j := range st.VolumeStats {
			vs := &st.VolumeStats[j]
			if vs.Name != vol.Name || vs.UsedBytes == nil {
				continue
			}
			if resource.NewQuantity(int64(*vs.UsedBytes), resource.BinarySI).Cmp(*vol.EmptyDir.SizeLimit) > 0 {
				e.Signal = SignalEmptyDirFsLimit
				e.Message = fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", vol.Name, vol.EmptyDir.SizeLimit.String())
				return true
			}
		}
	}
	return false
}

func podOverLimit(pod *v1.Pod, st *statsapi.PodStats, e *Eviction) bool {
	limit, found := podLimit(pod, v1.ResourceEphemeralStorage)
	if !found {
		return false
	}
	var used int64
	if st.EphemeralStorage != nil && st.EphemeralStorage.UsedBytes != nil {
		used = int64(*st.EphemeralStorage.UsedBytes)
	}
	if resource.NewQuantity(used, resource.BinarySI).Cmp(limit) <= 0 {
		return false
	}
	e.Signal = SignalEphemeralPodFsLimit
	e.Message = fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", limit.String())
	return true
}

func containerOverLimit(pod *v1.Pod, st *statsapi.PodStats, layout FsLayout, e *Eviction) bool {
	for _, cs := range st.Containers {
		var limit *resource.Quantity
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if c.Name == cs.Name {
				if q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && q.Value() != 0 {
					limit = &q
				}
				break
			}
		}
		if limit == nil {
			continue
		}
		var used int64
		if cs.Logs != nil && cs.Logs.UsedBytes != nil {
			used += int64(*cs.Logs.UsedBytes)
		}
		if layout == SharedFs && cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil {
			used += int64(*cs.Rootfs.UsedBytes)
		}
		if limit.Cmp(*resource.NewQuantity(used, resource.BinarySI)) < 0 {
			e.Signal = SignalEphemeralContainerFsLimit
			e.Message = fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", cs.Name, limit.String())
			return true
		}
	}
	return false
}
