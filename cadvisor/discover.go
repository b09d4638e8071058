package cadvisor

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/distribution/reference"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's container labels (pkg/kubelet/types/labels.go), which
// the runtime reports on its containers and sandboxes.
const (
	podNameLabel       = "io.kubernetes.pod.name"
	podNamespaceLabel  = "io.kubernetes.pod.namespace"
	containerNameLabel = "io.kubernetes.container.name"
)

// cgroupKind says which of cAdvisor's handlers a cgroup is under.
type cgroupKind int

const (
	rawCgroup cgroupKind = iota // the root, kubepods, QoS and pod cgroups
	containerCgroup
	sandboxCgroup // a container whose network is reported
)

// found is a cgroup housekeeping reads, with the kubelet's labels.
type found struct {
	id                                     string
	kind                                   cgroupKind
	podUID                                 string // pod cgroups
	name, image, pod, namespace, container string
	created                                time.Time
}

type runtimeMeta struct {
	found
	podUID string
}

// runtimeContainers lists the runtime's containers and sandboxes by ID,
// and the pods' names by UID.
func (c *Collector) runtimeContainers(ctx context.Context) (map[string]runtimeMeta, map[string][2]string, error) {
	sandboxes, err := c.cfg.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	containers, err := c.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]runtimeMeta, len(sandboxes)+len(containers))
	pods := make(map[string][2]string, len(sandboxes))
	uidOf := make(map[string]string, len(sandboxes))
	for _, s := range sandboxes {
		md := s.GetMetadata()
		pods[md.GetUid()] = [2]string{md.GetName(), md.GetNamespace()}
		uidOf[s.GetId()] = md.GetUid()
		byID[s.GetId()] = runtimeMeta{podUID: md.GetUid(), found: found{kind: sandboxCgroup, name: s.GetId(),
			image: c.cfg.SandboxImage, pod: md.GetName(), namespace: md.GetNamespace(),
			created: time.Unix(0, s.GetCreatedAt())}}
	}
	for _, ct := range containers {
		if ct.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue // an exited container's cgroup is gone
		}
		l := ct.GetLabels()
		byID[ct.GetId()] = runtimeMeta{podUID: uidOf[ct.GetPodSandboxId()], found: found{kind: containerCgroup, name: ct.GetId(),
			image: imageName(ct.GetImage()), pod: l[podNameLabel], namespace: l[podNamespaceLabel],
			container: l[containerNameLabel], created: time.Unix(0, ct.GetCreatedAt())}}
	}
	return byID, pods, nil
}

// imageName is the image as the pod names it, normalized as containerd
// records it ("busybox" is "docker.io/library/busybox:latest").
func imageName(spec *runtimeapi.ImageSpec) string {
	name := spec.GetUserSpecifiedImage()
	if name == "" {
		name = spec.GetImage()
	}
	if ref, err := reference.ParseNormalizedNamed(name); err == nil {
		return reference.TagNameOnly(ref).String()
	}
	return name
}

// discover walks the kubepods tree for pod and container cgroups, as
// cAdvisor's raw and containerd handlers find them: "/", kubepods, the
// QoS cgroups, each pod's cgroup (with its pod's name), and in it each
// container the runtime knows.
func (c *Collector) discover(ctx context.Context) ([]found, error) {
	byID, pods, err := c.runtimeContainers(ctx)
	if err != nil {
		return nil, err
	}
	out := []found{{id: "/"}, {id: c.cfg.KubepodsCgroup}}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		for _, name := range subdirs(c.h.dir(dir)) {
			id := dir + "/" + name
			if uid, ok := podUID(name); ok {
				f := found{id: id, podUID: uid}
				if p, ok := pods[uid]; ok {
					f.pod, f.namespace = p[0], p[1]
				}
				out = append(out, f)
				for _, cname := range subdirs(c.h.dir(id)) {
					if m, ok := byID[containerID(cname)]; ok && m.podUID == uid {
						m.found.id = id + "/" + cname
						out = append(out, m.found)
					}
				}
				continue
			}
			if depth == 0 && qosCgroup(name) {
				out = append(out, found{id: id})
				walk(id, 1)
			}
		}
	}
	walk(c.cfg.KubepodsCgroup, 0)
	return out, nil
}

func subdirs(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// podUID reads a pod cgroup's name: "pod<uid>" (cgroupfs) or
// "kubepods-<qos>-pod<uid with _>.slice" (systemd).
func podUID(name string) (string, bool) {
	if uid, ok := strings.CutPrefix(name, "pod"); ok {
		return uid, uid != ""
	}
	if s, ok := strings.CutSuffix(name, ".slice"); ok {
		if i := strings.LastIndex(s, "-pod"); i >= 0 && s[i+4:] != "" {
			return strings.ReplaceAll(s[i+4:], "_", "-"), true
		}
	}
	return "", false
}

func qosCgroup(name string) bool {
	switch name {
	case "burstable", "besteffort", "kubepods-burstable.slice", "kubepods-besteffort.slice":
		return true
	}
	return false
}

// containerID reads a container cgroup's name: the ID (cgroupfs), or
// "cri-containerd-<id>.scope" / "crio-<id>.scope" (systemd).
func containerID(name string) string {
	if s, ok := strings.CutSuffix(name, ".scope"); ok {
		if i := strings.LastIndexByte(s, '-'); i >= 0 {
			return s[i+1:]
		}
	}
	return name
}
