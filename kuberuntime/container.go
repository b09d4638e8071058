package kuberuntime

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/resources"
)

// Paths the kubelet masks or makes read-only in unprivileged containers
// (securitycontext.DefaultProcMountType).
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// ContainerInput is what ContainerConfig needs besides the spec.
type ContainerInput struct {
	RestartCount int
	ImageRef     string // resolved image ID
	PodIPs       []string
	Mounts       []kc.Mount
	// Env is the container's resolved environment (ResolveEnv); nil:
	// ContainerConfig resolves it.
	Env []v1.EnvVar
	// TargetID is, for an ephemeral container with a targetContainerName,
	// the runtime ID of that container: the ephemeral container joins its
	// process namespace (Pid mode TARGET), unless the pod shares one
	// process namespace or the host's. Empty for the others.
	TargetID string
}

// ResolveEnv is the container's environment as the kubelet's
// makeEnvironmentVariables resolves it (see containerEnv).
func (m *Manager) ResolveEnv(pod *v1.Pod, c *v1.Container, podIPs []string) ([]v1.EnvVar, error) {
	var allocatable v1.ResourceList
	if m.cfg.NodeAllocatable != nil {
		allocatable = m.cfg.NodeAllocatable()
	}
	env, err := containerEnv(pod, c, podIPs, m.cfg.HostIP, m.cfg.Objects, allocatable, m.cfg.Services)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.Name, err)
	}
	if env == nil {
		env = []v1.EnvVar{} // resolved, and empty: ContainerInput.Env nil means not resolved
	}
	return env, nil
}

// ContainerConfig builds the CRI container config (the kubelet's
// generateContainerConfig): metadata with the restart count as attempt, the
// image, command and args with $(VAR) expansion, environment, labels and
// annotations, log path <name>/<restartCount>.log, mounts, and Linux
// resources and security context. Errors name the container and the field.
func (m *Manager) ContainerConfig(pod *v1.Pod, c *v1.Container, in ContainerInput) (*runtimeapi.ContainerConfig, error) {
	if err := validateContainerIn(pod, c); err != nil {
		return nil, err
	}
	logPath, err := podpath.ContainerLogPath(c.Name, in.RestartCount)
	if err != nil {
		return nil, fmt.Errorf("container %s: log path: %w", c.Name, err)
	}
	env := in.Env
	if env == nil {
		if env, err = m.ResolveEnv(pod, c, in.PodIPs); err != nil {
			return nil, err
		}
	}
	vars := make(map[string]string, len(env))
	kv := make([]*runtimeapi.KeyValue, 0, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
		kv = append(kv, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	expand := func(in []string) []string {
		if in == nil {
			return nil
		}
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = expandVars(s, vars)
		}
		return out
	}
	userns, err := m.usernsOptions(pod)
	if err != nil {
		return nil, err
	}
	image := in.ImageRef
	if image == "" {
		image = c.Image
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(in.RestartCount)},
		Image:       &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		Command:     expand(c.Command),
		Args:        expand(c.Args),
		WorkingDir:  c.WorkingDir,
		Envs:        kv,
		Labels:      containerLabels(pod, c),
		Annotations: containerAnnotations(pod, c, in.RestartCount),
		Mounts:      criMounts(pod, in.Mounts, m.cfg.RuntimeHandler),
		Devices:     criDevices(in.Mounts),
		LogPath:     logPath,
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(resources.ContainerResources(pod, c, m.cfg.Resources)),
			SecurityContext: containerSecurityContext(pod, c, in.TargetID),
		},
	}
	cfg.Linux.Resources.Unified = m.unifiedResources()
	// The pod's user namespace, which the containers join.
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = userns
	idmapMounts(cfg.Mounts, userns)
	return cfg, nil
}

func containerSecurityContext(pod *v1.Pod, c *v1.Container, targetID string) *runtimeapi.LinuxContainerSecurityContext {
	ns := namespaceOptions(pod)
	// The kubelet's generateLinuxContainerConfig: only a container with its
	// own process namespace can be given its target's instead.
	if targetID != "" && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, targetID
	}
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: ns,
		// Copies: a caller that edits one container's config must not
		// change every later container's.
		MaskedPaths:   slices.Clone(defaultMaskedPaths),
		ReadonlyPaths: slices.Clone(defaultReadonlyPaths),
		Seccomp:       &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
	}
	csc := c.SecurityContext
	if csc == nil {
		return sc
	}
	if csc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *csc.RunAsUser}
	}
	if csc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *csc.RunAsGroup}
	}
	if csc.Privileged != nil && *csc.Privileged {
		sc.Privileged = true
		sc.MaskedPaths, sc.ReadonlyPaths = nil, nil
	}
	if csc.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *csc.ReadOnlyRootFilesystem
	}
	if csc.AllowPrivilegeEscalation != nil {
		sc.NoNewPrivs = !*csc.AllowPrivilegeEscalation
	}
	if caps := csc.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, c := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(c))
		}
		for _, c := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(c))
		}
	}
	return sc
}

// ValidateContainer checks the fields the runtime manager relies on, so a
// spec the runtime cannot honour fails with an error naming the container
// and the field instead of a runtime error, and only that container fails.
// It is for regular containers: with container restart rules (beta and on
// by default since v1.35) a restartPolicy may be Always, OnFailure or
// Never, with up to 20 restartPolicyRules, as the API server validates.
func ValidateContainer(c *v1.Container) error {
	if err := validateCommon(c); err != nil {
		return err
	}
	return validateRestartRules("container", c)
}

// ValidateInitContainer is ValidateContainer for an init container: its
// restartPolicy may be Always (a sidecar, without rules), or OnFailure or
// Never with rules.
func ValidateInitContainer(c *v1.Container) error {
	if err := validateCommon(c); err != nil {
		return err
	}
	if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways && len(c.RestartPolicyRules) > 0 {
		return fmt.Errorf("init container %s: restartPolicyRules: Forbidden: restartPolicyRules are not allowed for init containers with restart policy Always", c.Name)
	}
	return validateRestartRules("init container", c)
}

// validateRestartRules is the API server's validateContainerRestartPolicy.
func validateRestartRules(kind string, c *v1.Container) error {
	switch {
	case c.RestartPolicy == nil && len(c.RestartPolicyRules) > 0:
		return fmt.Errorf("%s %s: restartPolicy: Required value: must specify restartPolicy when restart rules are used", kind, c.Name)
	case c.RestartPolicy == nil:
		return nil
	}
	switch *c.RestartPolicy {
	case v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure, v1.ContainerRestartPolicyNever:
	default:
		return fmt.Errorf("%s %s: restartPolicy: Unsupported value: %q: supported values: \"Always\", \"Never\", \"OnFailure\"", kind, c.Name, *c.RestartPolicy)
	}
	if len(c.RestartPolicyRules) > 20 {
		return fmt.Errorf("%s %s: restartPolicyRules: Too many: %d: must have at most 20 items", kind, c.Name, len(c.RestartPolicyRules))
	}
	for i, r := range c.RestartPolicyRules {
		field := fmt.Sprintf("%s %s: restartPolicyRules[%d]", kind, c.Name, i)
		switch {
		case r.Action != v1.ContainerRestartRuleActionRestart:
			return fmt.Errorf("%s.action: Unsupported value: %q: supported values: \"Restart\"", field, r.Action)
		case r.ExitCodes == nil:
			return fmt.Errorf("%s.exitCodes: Required value: must be specified", field)
		case r.ExitCodes.Operator != v1.ContainerRestartRuleOnExitCodesOpIn && r.ExitCodes.Operator != v1.ContainerRestartRuleOnExitCodesOpNotIn:
			return fmt.Errorf("%s.exitCodes.operator: Unsupported value: %q: supported values: \"In\", \"NotIn\"", field, r.ExitCodes.Operator)
		case len(r.ExitCodes.Values) > 255:
			return fmt.Errorf("%s.exitCodes.values: Too many: %d: must have at most 255 items", field, len(r.ExitCodes.Values))
		}
	}
	return nil
}

// ValidateEphemeralContainer is ValidateContainer for an ephemeral
// container (kubectl debug), given as the v1.Container its
// EphemeralContainerCommon converts to: as the API server's
// validateEphemeralContainers, it may not have ports, probes, a lifecycle
// or a restartPolicy, which the runtime would otherwise act on.
func ValidateEphemeralContainer(c *v1.Container) error {
	if err := validateCommon(c); err != nil {
		return err
	}
	forbidden := func(field string) error {
		return fmt.Errorf("ephemeral container %s: %s: Forbidden: cannot be set for an Ephemeral Container", c.Name, field)
	}
	switch {
	case len(c.Ports) > 0:
		return forbidden("ports")
	case c.LivenessProbe != nil:
		return forbidden("livenessProbe")
	case c.ReadinessProbe != nil:
		return forbidden("readinessProbe")
	case c.StartupProbe != nil:
		return forbidden("startupProbe")
	case c.Lifecycle != nil:
		return forbidden("lifecycle")
	case c.RestartPolicy != nil:
		return fmt.Errorf("ephemeral container %s: restartPolicy: Forbidden: cannot be set for an Ephemeral Container (value %q)", c.Name, *c.RestartPolicy)
	}
	return nil
}

// validateContainerIn validates c as an init container or an ephemeral
// container when it is one of the pod's, else as a regular container.
func validateContainerIn(pod *v1.Pod, c *v1.Container) error {
	if pod != nil {
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == c.Name {
				return ValidateInitContainer(c)
			}
		}
		for i := range pod.Spec.EphemeralContainers {
			if pod.Spec.EphemeralContainers[i].Name == c.Name {
				return ValidateEphemeralContainer(c)
			}
		}
	}
	return ValidateContainer(c)
}

func validateCommon(c *v1.Container) error {
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		return fmt.Errorf("container %q: name: Invalid value: %q: %s", c.Name, c.Name, errs[0])
	}
	if c.Image == "" {
		return fmt.Errorf("container %s: image: Required value", c.Name)
	}
	for i, p := range c.Ports {
		if err := validatePort(p); err != nil {
			return fmt.Errorf("container %s: ports[%d].%w", c.Name, i, err)
		}
	}
	return nil
}

func validatePort(p v1.ContainerPort) error {
	if errs := validation.IsValidPortNum(int(p.ContainerPort)); len(errs) > 0 {
		return fmt.Errorf("containerPort: Invalid value: %d: %s", p.ContainerPort, errs[0])
	}
	if p.HostPort != 0 {
		if errs := validation.IsValidPortNum(int(p.HostPort)); len(errs) > 0 {
			return fmt.Errorf("hostPort: Invalid value: %d: %s", p.HostPort, errs[0])
		}
	}
	switch p.Protocol {
	case "", v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
	default:
		return fmt.Errorf("protocol: Unsupported value: %q", p.Protocol)
	}
	return nil
}

// linuxResources converts the kubelet's container resources to the CRI's.
func linuxResources(r resources.LinuxResources) *runtimeapi.LinuxContainerResources {
	return &runtimeapi.LinuxContainerResources{CpuShares: r.CPUShares, CpuPeriod: r.CPUPeriod, CpuQuota: r.CPUQuota,
		MemoryLimitInBytes: r.MemoryLimitInBytes, OomScoreAdj: r.OOMScoreAdj}
}

// criMounts converts the mounts as the kubelet's makeMounts: a host path,
// or, for an image volume, the image the runtime mounts, with the image ID
// as Image, the volume's reference as UserSpecifiedImage, the pod's
// runtime handler and annotations (getImageVolumes), the subPath inside
// it, read-only.
func criMounts(pod *v1.Pod, ms []kc.Mount, runtimeHandler string) []*runtimeapi.Mount {
	out := make([]*runtimeapi.Mount, 0, len(ms))
	for _, m := range ms {
		if m.Device {
			continue
		}
		cm := &runtimeapi.Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, Readonly: m.ReadOnly}
		if m.Image != "" {
			spec := &runtimeapi.ImageSpec{Image: m.Image, UserSpecifiedImage: imageVolumeReference(pod, m.Name), RuntimeHandler: runtimeHandler}
			if pod != nil {
				spec.Annotations = pod.Annotations
			}
			cm.Image, cm.ImageSubPath, cm.HostPath, cm.Readonly = spec, m.ImageSubPath, "", true
		}
		out = append(out, cm)
	}
	return out
}

// criDevices are the block volumes' devices, as the kubelet's
// makeBlockVolumes: permissions mrw, r for a read-only claim.
func criDevices(ms []kc.Mount) []*runtimeapi.Device {
	var out []*runtimeapi.Device
	for _, m := range ms {
		if m.Device {
			perm := "mrw"
			if m.ReadOnly {
				perm = "r"
			}
			out = append(out, &runtimeapi.Device{ContainerPath: m.ContainerPath, HostPath: m.HostPath, Permissions: perm})
		}
	}
	return out
}

// imageVolumeReference is the reference of the pod's image volume name,
// "" if there is none.
func imageVolumeReference(pod *v1.Pod, name string) string {
	if pod == nil || name == "" {
		return ""
	}
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Name == name && v.Image != nil {
			return v.Image.Reference
		}
	}
	return ""
}

// verifyRunAsNonRoot is the kubelet's: a container whose effective
// securityContext says runAsNonRoot may not run as root, from its
// runAsUser, else from its image's user (ImageStatus; none said is root);
// an image user given by name cannot be checked and is refused too.
func (m *Manager) verifyRunAsNonRoot(ctx context.Context, pod *v1.Pod, c *v1.Container, imageRef string) error {
	var nonRoot *bool
	var runAsUser *int64
	if psc := pod.Spec.SecurityContext; psc != nil {
		nonRoot, runAsUser = psc.RunAsNonRoot, psc.RunAsUser
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsNonRoot != nil {
			nonRoot = csc.RunAsNonRoot
		}
		if csc.RunAsUser != nil {
			runAsUser = csc.RunAsUser
		}
	}
	if nonRoot == nil || !*nonRoot {
		return nil
	}
	who := fmt.Sprintf("(pod: %q, container: %s)", fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID), c.Name)
	if runAsUser != nil {
		if *runAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy %s", who)
		}
		return nil
	}
	st, err := m.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageRef}, false)
	if err != nil {
		return err
	}
	img := st.GetImage()
	switch {
	case img.GetUid() != nil && img.GetUid().GetValue() != 0:
		return nil
	case img.GetUid() == nil && img.GetUsername() != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", img.GetUsername(), who)
	}
	return fmt.Errorf("container has runAsNonRoot and image will run as root %s", who)
}
