package kuberuntime

import (
	"context"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ensureImage applies the container's pull policy and returns the image ID
// to run: Never requires the image to be present, IfNotPresent pulls only
// when absent, Always pulls every time. Failed pulls back off like crashing
// containers (ImagePullBackOff).
func (m *Manager) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = DefaultPullPolicy(c.Image)
	}
	st, err := m.cfg.Images.ImageStatus(ctx, spec, false)
	if err != nil {
		return "", fail(ErrImageInspect, "pod %s: container %s: image %q: %w", podRef(pod), c.Name, c.Image, err)
	}
	present := st.GetImage() != nil
	switch {
	case present && policy != v1.PullAlways:
		m.event(pod, c, v1.EventTypeNormal, EventPulled, "Container image %q already present on machine", c.Image)
		return st.Image.Id, nil
	case !present && policy == v1.PullNever:
		m.event(pod, c, v1.EventTypeWarning, EventNeverPull, "Container image %q is not present with pull policy of Never", c.Image)
		return "", fail(ErrImageNeverPull, "pod %s: container %s: image: Container image %q is not present with pull policy of Never",
			podRef(pod), c.Name, c.Image)
	}
	key := string(pod.UID) + "_" + c.Image
	now := m.cfg.Clock.Now()
	if m.cfg.ImageBackOff.IsInBackOffSinceUpdate(key, now) {
		m.event(pod, c, v1.EventTypeNormal, EventBackOff, "Back-off pulling image %q", c.Image)
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Error: %s", ErrImagePullBackOff)
		return "", fail(ErrImagePullBackOff, "pod %s: container %s: Back-off pulling image %q", podRef(pod), c.Name, c.Image)
	}
	m.event(pod, c, v1.EventTypeNormal, EventPulling, "Pulling image %q", c.Image)
	ref, err := m.cfg.Images.PullImage(ctx, spec, nil, sandboxCfg)
	if err != nil {
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Failed to pull image %q: %v", c.Image, err)
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Error: %s", ErrImagePull)
		m.cfg.ImageBackOff.Next(key, now)
		return "", fail(ErrImagePull, "pod %s: container %s: pulling image %q: %w", podRef(pod), c.Name, c.Image, err)
	}
	m.event(pod, c, v1.EventTypeNormal, EventPulled, "Successfully pulled image %q in %v", c.Image, m.cfg.Clock.Since(now).Round(time.Millisecond))
	return ref, nil
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
