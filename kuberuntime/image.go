package kuberuntime

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// ensureImage applies the container's pull policy and returns the image ID
// to run (ensureImageExists); a failure is also a Failed "Error: <reason>"
// event on the container, as the kubelet's startContainer records.
func (m *Manager) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxCfg *runtimeapi.PodSandboxConfig,
	creds *podCredentials) (string, error) {
	ref, err := m.ensureImageExists(ctx, pod, c, c.Image, c.ImagePullPolicy, sandboxCfg, creds)
	if err != nil {
		m.imageErrorEvent(pod, c, err)
		return "", withinStep(err, "pod %s: container %s", podRef(pod), c.Name)
	}
	return ref, nil
}

// imageErrorEvent is the kubelet's Failed event on a container whose image,
// or an image volume it mounts, could not be had: "Error: ErrImagePull",
// "Error: ImagePullBackOff", "Error: ErrImageNeverPull"... or, for a pull
// secret that does not parse, "Error: " and that error.
func (m *Manager) imageErrorEvent(pod *v1.Pod, c *v1.Container, err error) {
	if k := kindOf(err); k != nil {
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Error: %s", k)
		return
	}
	m.event(pod, c, v1.EventTypeWarning, EventFailed, "Error: %v", err)
}

// withinStep is within for a step error; another error (a pull secret
// that does not parse: the kubelet's waiting reason is its text) is
// returned as it is.
func withinStep(err error, format string, args ...any) error {
	if kindOf(err) == nil {
		return err
	}
	return within(err, format, args...)
}

// ensureImageExists is the kubelet's EnsureImageExists: it applies policy
// (default from the image: DefaultPullPolicy) and returns the image ID:
// Never requires the image to be present, IfNotPresent pulls only when
// absent, Always pulls every time. Failed pulls back off per pod and image
// (ImagePullBackOff, 10s doubling to 5m). Events go on the container, or
// on the pod when c is nil (an image volume). A pull uses the pod's pull
// secrets' credentials for the image (creds, read once per sync), each in
// turn, or none when none match. The error is a step error of kind
// ErrImageInspect, ErrImageNeverPull, ErrImagePull or ErrImagePullBackOff,
// its message the kubelet's, or, before any back-off or pull, the error
// of a pull secret or image name that does not parse.
func (m *Manager) ensureImageExists(ctx context.Context, pod *v1.Pod, c *v1.Container, image string, policy v1.PullPolicy,
	sandboxCfg *runtimeapi.PodSandboxConfig, creds *podCredentials) (string, error) {
	spec := &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image}
	if policy == "" {
		policy = DefaultPullPolicy(image)
	}
	st, err := m.cfg.Images.ImageStatus(ctx, spec, false)
	if err != nil {
		return "", fail(ErrImageInspect, "Failed to inspect image %q: %w", image, err)
	}
	present := st.GetImage() != nil
	switch {
	case present && policy != v1.PullAlways:
		m.event(pod, c, v1.EventTypeNormal, EventPulled, "Container image %q already present on machine", image)
		m.cfg.Startup.RecordImageFinishedPulling(pod.UID) // a pull of it under way (another pod's) is over
		return st.Image.Id, nil
	case !present && policy == v1.PullNever:
		m.event(pod, c, v1.EventTypeWarning, EventNeverPull, "Container image %q is not present with pull policy of Never", image)
		return "", fail(ErrImageNeverPull, "Container image %q is not present with pull policy of Never", image)
	}
	giveStartSlot(ctx) // a pull (and reading its secrets) may take minutes
	auths, err := creds.lookup(ctx, image)
	if err != nil {
		return "", err
	}
	key := string(pod.UID) + "_" + image
	now := m.cfg.Clock.Now()
	if m.cfg.ImageBackOff.IsInBackOffSinceUpdate(key, now) {
		m.event(pod, c, v1.EventTypeNormal, EventBackOff, "Back-off pulling image %q", image)
		return "", fail(ErrImagePullBackOff, "Back-off pulling image %q", image)
	}
	m.cfg.Startup.RecordImageStartedPulling(pod.UID)
	m.event(pod, c, v1.EventTypeNormal, EventPulling, "Pulling image %q", image)
	ref, err := m.pull(ctx, spec, auths, sandboxCfg)
	if err != nil {
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Failed to pull image %q: %v", image, err)
		m.cfg.ImageBackOff.Next(key, now)
		return "", fail(ErrImagePull, "pulling image %q: %w", image, err)
	}
	m.cfg.Startup.RecordImageFinishedPulling(pod.UID)
	m.event(pod, c, v1.EventTypeNormal, EventPulled, "Successfully pulled image %q in %v", image, m.cfg.Clock.Since(now).Round(time.Millisecond))
	return ref, nil
}

// imageVolumePull is the outcome of pulling one image volume: the image
// ID the runtime mounts, or the failure.
type imageVolumePull struct {
	ref string
	err error
}

// pullImageVolumes is the kubelet's getImageVolumes: every volumes[].image
// of the pod pulled with its pullPolicy (events on the pod), before any
// container starts, by volume name. A failure is kept for the containers
// that mount the volume (imageVolumesFor), the others start.
func (m *Manager) pullImageVolumes(ctx context.Context, pod *v1.Pod, sandboxCfg *runtimeapi.PodSandboxConfig,
	creds *podCredentials) map[string]imageVolumePull {
	var out map[string]imageVolumePull
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Image == nil {
			continue
		}
		if out == nil {
			out = map[string]imageVolumePull{}
		}
		ref, err := m.ensureImageExists(ctx, pod, nil, vol.Image.Reference, vol.Image.PullPolicy, sandboxCfg, creds)
		if err != nil {
			m.log().Error(err, "pulling image volume", "pod", fmtPod(pod), "volume", vol.Name)
		}
		out[vol.Name] = imageVolumePull{ref: ref, err: err}
	}
	return out
}

// imageVolumesFor is the kubelet's toKubeContainerImageVolumes: the image
// IDs of the image volumes c mounts, by volume name, or, if the pull of
// one failed, that failure (the last one), after a Failed "Error: <reason>"
// event on c for each: the container waits with ErrImagePull,
// ImagePullBackOff... as for its own image.
func (m *Manager) imageVolumesFor(pod *v1.Pod, c *v1.Container, pulls map[string]imageVolumePull) (map[string]string, error) {
	if len(pulls) == 0 {
		return nil, nil
	}
	var out map[string]string
	var last error
	var lastVol string
	for _, vm := range c.VolumeMounts {
		p, ok := pulls[vm.Name]
		if !ok {
			continue
		}
		if p.err != nil {
			m.imageErrorEvent(pod, c, p.err)
			last, lastVol = p.err, vm.Name
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[vm.Name] = p.ref
	}
	if last != nil {
		return nil, withinStep(last, "pod %s: container %s: volume %s", podRef(pod), c.Name, lastVol)
	}
	return out, nil
}

// withImages sets, on each mount of an image volume (by Name), the image
// ID the pull resolved; a mount of an image volume that was not pulled is
// an error.
func withImages(pod *v1.Pod, mounts []kc.Mount, images map[string]string) ([]kc.Mount, error) {
	for i := range mounts {
		mt := &mounts[i]
		if mt.HostPath != "" || mt.Image != "" {
			continue
		}
		ref, ok := images[mt.Name]
		if !ok {
			return nil, fmt.Errorf("mount at %s: Required value: a host path or, for an image volume, an image (volume %q is not a pulled image volume of pod %s)",
				mt.ContainerPath, mt.Name, podRef(pod))
		}
		mt.Image = ref
	}
	return mounts, nil
}

// DefaultPullPolicy is the API server's default: Always for an image without
// a tag or tagged :latest, IfNotPresent otherwise (a digest counts as a tag).
func DefaultPullPolicy(image string) v1.PullPolicy {
	if strings.Contains(image, "@") {
		return v1.PullIfNotPresent
	}
	name := image[strings.LastIndexByte(image, '/')+1:]
	i := strings.LastIndexByte(name, ':')
	if i < 0 || name[i+1:] == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}
