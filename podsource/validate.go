package podsource

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodekit-dev/nodekit/podpath"
)

// ValidatePod checks what a node needs to run a pod that did not come
// through the API server, with the API's rules for those fields: metadata
// (name DNS-1123 subdomain, namespace DNS-1123 label, labels, annotations),
// at least one container, container names DNS-1123 labels unique across
// init, regular and ephemeral containers, images present, ports (numbers
// 1-65535, protocol TCP/UDP/SCTP, IANA names unique per container), env
// names, volumes (DNS-1123 labels, unique, exactly one source) and volume
// mounts that name a volume, resources (non-negative, requests <= limits),
// restartPolicy, dnsPolicy, imagePullPolicy and probe numbers, subPath
// and hostPath without "..", an image volume's reference and pullPolicy,
// hostUsers: false without hostNetwork, hostPID, hostIPC or volumeDevices
// (and procMount Unmasked only with it), and no imagePullSecrets: the
// kubelet refuses a static pod that references secrets ("static pods may
// not reference secrets"). It is a subset of the API server's
// ValidatePodCreate (k8s.io/kubernetes is not a dependency); each error
// carries its field path and value. The sources run it after defaulting, as
// the kubelet does, so a bad name is reported with the node suffix.
//
// A node also puts the pod's UID, namespace and name in paths, so it checks
// what the API server never needs to: metadata.uid must be a UID that
// package podpath accepts (ValidateUID: ASCII letters, digits and '-', at
// most 128 characters: UUIDs and the kubelet's hex digests fit, "../x" does
// not), and <namespace>_<name>_<uid>, the pod's log directory name, must fit
// in a file name (255 bytes). The kubelet takes a static pod's UID as
// written; nodekit refuses the pod instead.
func ValidatePod(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	metaErrs := apivalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, metaErrs...)
	for _, msg := range podpath.ValidateUID(string(pod.UID)) {
		errs = append(errs, podpath.InvalidValue(meta.Child("uid"), string(pod.UID), msg))
	}
	if len(errs) == 0 {
		if _, err := podpath.PodLogsDirName(pod.Namespace, pod.Name, pod.UID); err != nil {
			var fe *field.Error
			if !errors.As(err, &fe) {
				fe = field.Invalid(meta.Child("name"), pod.Name, err.Error())
			}
			errs = append(errs, fe)
		}
	}
	spec := field.NewPath("spec")
	s := &pod.Spec

	vols := sets.New[string]()
	for i, v := range s.Volumes {
		p := spec.Child("volumes").Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), v.Name, msg))
			}
			if vols.Has(v.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
			}
			vols.Insert(v.Name)
		}
		if n := countVolumeSources(&v.VolumeSource); n != 1 {
			errs = append(errs, field.Invalid(p, v.Name, fmt.Sprintf("must specify exactly one volume source, got %d", n)))
		}
		if img := v.Image; img != nil {
			ip := p.Child("image")
			if img.Reference == "" {
				errs = append(errs, field.Required(ip.Child("reference"), ""))
			}
			switch img.PullPolicy {
			case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
			default:
				errs = append(errs, field.NotSupported(ip.Child("pullPolicy"), img.PullPolicy,
					[]v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullNever}))
			}
		}
		if h := v.HostPath; h != nil {
			hp := p.Child("hostPath", "path")
			if h.Path == "" {
				errs = append(errs, field.Required(hp, ""))
			} else if hasBackstep(h.Path) {
				errs = append(errs, field.Invalid(hp, h.Path, "must not contain '..'"))
			}
		}
	}

	// The kubelet's HasAPIObjectReference, for pull secrets (an entry
	// without a name references nothing).
	for i, ref := range s.ImagePullSecrets {
		if ref.Name != "" {
			errs = append(errs, field.Forbidden(spec.Child("imagePullSecrets").Index(i), "static pods may not reference secrets"))
			break
		}
	}

	names := sets.New[string]()
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "at least one container"))
	}
	for i := range s.InitContainers {
		errs = append(errs, validateContainer(&s.InitContainers[i], spec.Child("initContainers").Index(i), names, vols)...)
	}
	for i := range s.Containers {
		errs = append(errs, validateContainer(&s.Containers[i], spec.Child("containers").Index(i), names, vols)...)
	}
	for i := range s.EphemeralContainers {
		c := (*v1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon)
		errs = append(errs, validateContainer(c, spec.Child("ephemeralContainers").Index(i), names, vols)...)
	}

	switch s.RestartPolicy {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), s.RestartPolicy,
			[]v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}))
	}
	switch s.DNSPolicy {
	case v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault, v1.DNSNone:
	default:
		errs = append(errs, field.NotSupported(spec.Child("dnsPolicy"), s.DNSPolicy,
			[]v1.DNSPolicy{v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault, v1.DNSNone}))
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(spec.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds <= 0 {
		errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *s.ActiveDeadlineSeconds, "must be greater than 0"))
	}
	errs = append(errs, validateHostUsers(s, spec)...)
	return errs
}

// validateHostUsers is the API server's check of spec.hostUsers (GA in
// v1.36): a pod in its own user namespace shares no other namespace with
// the host and has no volumeDevices (neither idmapped nor chowned); an
// Unmasked procMount needs one. The field paths are the API server's.
func validateHostUsers(s *v1.PodSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	hostUsers := s.HostUsers == nil || *s.HostUsers
	each := func(visit func(c *v1.Container, p *field.Path)) {
		for i := range s.InitContainers {
			visit(&s.InitContainers[i], spec.Child("initContainers").Index(i))
		}
		for i := range s.Containers {
			visit(&s.Containers[i], spec.Child("containers").Index(i))
		}
		for i := range s.EphemeralContainers {
			visit((*v1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon), spec.Child("ephemeralContainers").Index(i))
		}
	}
	if hostUsers {
		each(func(c *v1.Container, p *field.Path) {
			if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount == v1.UnmaskedProcMount {
				errs = append(errs, field.Invalid(p.Child("securityContext", "procMount"), *sc.ProcMount,
					"`hostUsers` must be false to use `Unmasked`"))
			}
		})
		return errs
	}
	if s.HostNetwork {
		errs = append(errs, field.Forbidden(spec.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	if s.HostPID {
		errs = append(errs, field.Forbidden(spec.Child("HostPID"), "when `hostUsers` is false"))
	}
	if s.HostIPC {
		errs = append(errs, field.Forbidden(spec.Child("HostIPC"), "when `hostUsers` is false"))
	}
	each(func(c *v1.Container, p *field.Path) {
		if len(c.VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(p.Child("volumeDevices"), "when `hostUsers` is false"))
		}
	})
	return errs
}

func validateContainer(c *v1.Container, p *field.Path, names, vols sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
	}
	if strings.TrimSpace(c.Image) == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	} else if c.Image != strings.TrimSpace(c.Image) {
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	switch c.ImagePullPolicy {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullNever}))
	}
	portNames := sets.New[string]()
	for i, port := range c.Ports {
		pp := p.Child("ports").Index(i)
		for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, msg))
			}
		}
		switch port.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol,
				[]v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}))
		}
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
			}
			if portNames.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			}
			portNames.Insert(port.Name)
		}
	}
	for i, e := range c.Env {
		for _, msg := range validation.IsRelaxedEnvVarName(e.Name) { // the API server's since v1.34
			errs = append(errs, field.Invalid(p.Child("env").Index(i).Child("name"), e.Name, msg))
		}
	}
	for i, m := range c.VolumeMounts {
		mp := p.Child("volumeMounts").Index(i)
		if !vols.Has(m.Name) {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		}
		if sp := m.SubPath; sp != "" {
			// The API's validateLocalDescendingPath.
			if strings.HasPrefix(sp, "/") {
				errs = append(errs, field.Invalid(mp.Child("subPath"), sp, "must be a relative path"))
			} else if hasBackstep(sp) {
				errs = append(errs, field.Invalid(mp.Child("subPath"), sp, "must not contain '..'"))
			}
		}
	}
	rp := p.Child("resources")
	for name, q := range c.Resources.Limits {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(rp.Child("limits").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for name, q := range c.Resources.Requests {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(rp.Child("requests").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
		if l, ok := c.Resources.Limits[name]; ok && q.Cmp(l) > 0 {
			errs = append(errs, field.Invalid(rp.Child("requests").Key(string(name)), q.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, l.String())))
		}
	}
	probes := []struct {
		name string
		p    *v1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}}
	for _, pr := range probes {
		if pr.p == nil {
			continue
		}
		pp := p.Child(pr.name)
		for _, f := range []struct {
			n   string
			v   int32
			min int32
		}{{"initialDelaySeconds", pr.p.InitialDelaySeconds, 0}, {"timeoutSeconds", pr.p.TimeoutSeconds, 1},
			{"periodSeconds", pr.p.PeriodSeconds, 1}, {"successThreshold", pr.p.SuccessThreshold, 1},
			{"failureThreshold", pr.p.FailureThreshold, 1}} {
			if f.v < f.min {
				errs = append(errs, field.Invalid(pp.Child(f.n), f.v, fmt.Sprintf("must be greater than or equal to %d", f.min)))
			}
		}
		n := 0
		if pr.p.Exec != nil {
			n++
		}
		if pr.p.HTTPGet != nil {
			n++
		}
		if pr.p.TCPSocket != nil {
			n++
		}
		if pr.p.GRPC != nil {
			n++
		}
		if n != 1 {
			errs = append(errs, field.Invalid(pp, n, "must specify exactly one handler (exec, httpGet, tcpSocket or grpc)"))
		}
	}
	return errs
}

// countVolumeSources counts the non-nil members of a VolumeSource (a struct
// of pointers) without listing them: the JSON form has one key per source.
func countVolumeSources(vs *v1.VolumeSource) int {
	m, err := toMap(vs)
	if err != nil {
		return 1
	}
	return len(m)
}

// hasBackstep reports a ".." element in a slash-separated path.
func hasBackstep(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}
