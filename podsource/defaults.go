package podsource

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SetAPIDefaults fills the defaults the API server would have set on a pod
// created through it, the ones a static pod needs to be run as the API
// would: restartPolicy Always, dnsPolicy ClusterFirst,
// terminationGracePeriodSeconds 30, schedulerName default-scheduler, an
// empty pod securityContext, and for every init, regular and ephemeral
// container: imagePullPolicy from the image tag (Always for :latest or no
// tag, IfNotPresent otherwise or with a digest), terminationMessagePath
// /dev/termination-log with policy File, port protocol TCP, probe timeouts
// 1s, period 10s, success 1, failure 3 (HTTP probes: path "/", scheme HTTP),
// and requests copied from limits where absent. Volumes without a source
// become emptyDir, as in the API, and an image volume's pullPolicy is
// defaulted from its reference as a container's imagePullPolicy.
func SetAPIDefaults(pod *v1.Pod) {
	s := &pod.Spec
	if s.RestartPolicy == "" {
		s.RestartPolicy = v1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = v1.DNSClusterFirst
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := int64(v1.DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &g
	}
	if s.SchedulerName == "" {
		s.SchedulerName = v1.DefaultSchedulerName
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &v1.PodSecurityContext{}
	}
	for i := range s.InitContainers {
		setContainerDefaults(&s.InitContainers[i])
	}
	for i := range s.Containers {
		setContainerDefaults(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		c := (*v1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon)
		setContainerDefaults(c)
	}
	for i := range s.Volumes {
		if s.Volumes[i].VolumeSource == (v1.VolumeSource{}) {
			s.Volumes[i].EmptyDir = &v1.EmptyDirVolumeSource{}
		}
		if img := s.Volumes[i].Image; img != nil && img.PullPolicy == "" {
			img.PullPolicy = pullPolicyFor(img.Reference)
		}
	}
}

func setContainerDefaults(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(p)
	}
	if len(c.Resources.Limits) > 0 {
		for name, q := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; ok {
				continue
			}
			if c.Resources.Requests == nil {
				c.Resources.Requests = v1.ResourceList{}
			}
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
}

func setProbeDefaults(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = v1.URISchemeHTTP
		}
	}
}

// pullPolicyFor is the API's default: Always when the image has no tag or
// the tag "latest" (and no digest), IfNotPresent otherwise.
func pullPolicyFor(image string) v1.PullPolicy {
	if strings.Contains(image, "@") {
		return v1.PullIfNotPresent
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 && last[i+1:] != "latest" {
		return v1.PullIfNotPresent
	}
	return v1.PullAlways
}

// PodUID is the kubelet's UID for a non-API pod without one: the hex md5 of
// the pod (as decoded and API-defaulted, before the kubelet's own defaults)
// followed by "host:<node>" and "file:<path>" for files, or "url:<origin>"
// for the other sources, as in pkg/kubelet/config/common.go. The pod is
// hashed through its JSON encoding (struct order, sorted map keys), which is
// stable across restarts and processes and independent of formatting,
// comments and of spelling out API defaults: the same content on the same
// node and path gets the same UID, any change in content a new one.
//
// So editing a manifest without metadata.uid changes its UID: the stream
// shows REMOVE of the old pod then ADD of the new one, exactly what the
// kubelet does (a new UID is a new pod to the pod workers). A manifest with
// metadata.uid keeps it, and an edit is an UPDATE.
//
// The kubelet hashes a spew dump (hashutil.DeepHashObject): the values
// differ from the kubelet's, the properties are the same, so the UIDs of
// existing static pods change once when a node moves from the kubelet to
// this package.
func PodUID(pod *v1.Pod, kind, origin, nodeName string) types.UID {
	b, err := json.Marshal(pod)
	if err != nil { // cannot happen for a v1.Pod; fall back to a spew-like dump
		b = fmt.Appendf(nil, "%#v", pod)
	}
	h := md5.New()
	h.Write(b)
	if kind == SourceFile {
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", origin)
	} else {
		fmt.Fprintf(h, "url:%s", origin)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)))
}

// ApplyKubeletDefaults is pkg/kubelet/config/common.go applyDefaults for a
// pod from a non-API source of the given kind (SourceFile or SourceHTTP),
// read from origin (file path or URL) on node nodeName: the UID (PodUID) if
// empty, the name suffixed with "-<lowercased node name>", namespace
// "default" if empty, spec.nodeName, the config.hash (= UID) and
// config.source annotations, for files the NoExecute toleration with
// operator Exists, and status.phase Pending. The config.seen annotation is
// the mux's, on first sight.
func ApplyKubeletDefaults(pod *v1.Pod, kind, origin, nodeName string) {
	if pod.UID == "" {
		pod.UID = PodUID(pod, kind, origin, nodeName)
	}
	pod.Name = pod.Name + "-" + strings.ToLower(nodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ConfigHashAnnotation] = string(pod.UID)
	pod.Annotations[ConfigSourceAnnotation] = kind
	if kind == SourceFile {
		addOrUpdateToleration(pod, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	}
	pod.Status.Phase = v1.PodPending
}

// addOrUpdateToleration is helper.AddOrUpdateTolerationInPod: replace a
// toleration with the same key, operator, value and effect, else append.
func addOrUpdateToleration(pod *v1.Pod, t v1.Toleration) {
	for i, old := range pod.Spec.Tolerations {
		if old.Key == t.Key && old.Operator == t.Operator && old.Value == t.Value && old.Effect == t.Effect {
			pod.Spec.Tolerations[i] = t
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
}
