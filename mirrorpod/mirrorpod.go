package mirrorpod

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// The kubelet's annotations: a static pod's hash, and the mirror pod's copy
// of it that ties the two.
const (
	ConfigHashAnnotation   = "kubernetes.io/config.hash"
	ConfigMirrorAnnotation = "kubernetes.io/config.mirror"
	// ConfigSourceAnnotation says where a pod came from; "api" for the
	// API server's pods, anything else makes it a static pod.
	ConfigSourceAnnotation = "kubernetes.io/config.source"
)

// IsMirrorPod reports whether pod is a mirror pod: the API's picture of a
// static pod, never to be run.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotation]
	return ok
}

// IsMirrorPodOf reports whether mirror reflects the current version of
// static: same name, and the hash it carries is the static pod's.
func IsMirrorPodOf(mirror, static *v1.Pod) bool {
	if mirror.Name != static.Name || mirror.Namespace != static.Namespace {
		return false
	}
	hash, ok := static.Annotations[ConfigHashAnnotation]
	return ok && mirror.Annotations[ConfigMirrorAnnotation] == hash
}

// For returns the mirror pod of static for the node: a copy carrying the
// hash in the mirror annotation and owned by the Node (NodeRestriction
// admits nothing else from a node).
func For(static *v1.Pod, nodeName string, nodeUID types.UID) *v1.Pod {
	m := static.DeepCopy()
	m.ResourceVersion, m.UID, m.Status = "", "", v1.PodStatus{}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[ConfigMirrorAnnotation] = static.Annotations[ConfigHashAnnotation]
	controller := true
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID, Controller: &controller}}
	return m
}

// Client is the part of the API client a Manager calls: a
// kubeapi.Interface, or a client-go clientset through
// kubeapi/clientgo.Adapt.
type Client interface {
	Nodes() kubeapi.StatusClient[*v1.Node, *v1.NodeList]
	Pods(namespace string) kubeapi.StatusClient[*v1.Pod, *v1.PodList]
}

// Config configures a Manager.
type Config struct {
	Client   Client
	NodeName string
	Log      logr.Logger
}

// Manager keeps one mirror pod in the API for each static pod, as the
// kubelet's mirror client and pod manager do: created when missing,
// deleted and recreated when stale (the static pod changed) or being
// deleted, removed when its static pod goes. It learns the mirror pods
// that exist from the API pod source (Observe, Forget).
type Manager struct {
	cfg     Config
	mu      sync.Mutex
	mirrors map[string]*v1.Pod // by namespace/name
}

// New validates cfg.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("mirrorpod: Config.Client is nil")
	case cfg.NodeName == "":
		return nil, errors.New("mirrorpod: Config.NodeName is empty")
	}
	return &Manager{cfg: cfg, mirrors: map[string]*v1.Pod{}}, nil
}

func key(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// Observe records a mirror pod the API pod source delivered (added or
// updated); other pods are ignored.
func (m *Manager) Observe(pod *v1.Pod) {
	if !IsMirrorPod(pod) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mirrors[key(pod)] = pod
}

// Forget records that a mirror pod is gone from the API.
func (m *Manager) Forget(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.mirrors[key(pod)]; cur != nil && (pod.UID == "" || cur.UID == pod.UID) {
		delete(m.mirrors, key(pod))
	}
}

// Mirror returns the mirror pod known for static, or nil.
func (m *Manager) Mirror(static *v1.Pod) *v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mirrors[key(static)]
}

// Sync makes static's mirror pod current: a stale or terminating one is
// deleted (grace 0, with its UID as precondition), a missing one created.
func (m *Manager) Sync(ctx context.Context, static *v1.Pod) error {
	if mirror := m.Mirror(static); mirror != nil {
		if mirror.DeletionTimestamp == nil && IsMirrorPodOf(mirror, static) {
			return nil
		}
		m.cfg.Log.Info("Deleting stale mirror pod", "pod", key(static), "uid", mirror.UID)
		if err := m.delete(ctx, mirror); err != nil {
			return err
		}
	}
	node, err := m.cfg.Client.Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("mirrorpod: %s: getting node %s for the owner reference: %w", key(static), m.cfg.NodeName, err)
	}
	create := func() (*v1.Pod, error) {
		return m.cfg.Client.Pods(static.Namespace).Create(ctx, For(static, m.cfg.NodeName, node.UID), metav1.CreateOptions{})
	}
	created, err := create()
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := m.cfg.Client.Pods(static.Namespace).Get(ctx, static.Name, metav1.GetOptions{})
		switch {
		case gerr == nil && IsMirrorPod(existing) && existing.DeletionTimestamp != nil:
			// Being deleted (its grace period running): never adopted, as
			// the kubelet's syncPod only deletes and creates. Deleted now,
			// then created anew (or at the next sync, if still there).
			if err := m.delete(ctx, existing); err != nil {
				return err
			}
			created, err = create()
		case gerr == nil && IsMirrorPod(existing) && IsMirrorPodOf(existing, static):
			m.Observe(existing)
			return nil
		default:
			return fmt.Errorf("mirrorpod: %s: a pod of that name exists and is not its mirror pod: %w", key(static), err)
		}
	}
	if err != nil {
		return fmt.Errorf("mirrorpod: creating the mirror pod of %s: %w", key(static), err)
	}
	m.Observe(created)
	return nil
}

// DeleteOrphans deletes the mirror pods whose static pod is gone: static
// says, by namespace/name, which static pods exist.
func (m *Manager) DeleteOrphans(ctx context.Context, static func(namespace, name string) bool) error {
	m.mu.Lock()
	var orphans []*v1.Pod
	for _, p := range m.mirrors {
		if !static(p.Namespace, p.Name) {
			orphans = append(orphans, p)
		}
	}
	m.mu.Unlock()
	var errs []error
	for _, p := range orphans {
		m.cfg.Log.Info("Deleting orphaned mirror pod", "pod", key(p), "uid", p.UID)
		errs = append(errs, m.delete(ctx, p))
	}
	return errors.Join(errs...)
}

func (m *Manager) delete(ctx context.Context, mirror *v1.Pod) error {
	grace := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &grace}
	if mirror.UID != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &mirror.UID}
	}
	err := m.cfg.Client.Pods(mirror.Namespace).Delete(ctx, mirror.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("mirrorpod: deleting mirror pod %s: %w", key(mirror), err)
	}
	m.Forget(mirror)
	return nil
}

// Split takes the mirror pods out of pods the API source delivered,
// observing them (or forgetting them when removed is true), and returns
// the others: the pods to run. removed means gone from the API (a
// REMOVE); a mirror pod with a deletion timestamp (a DELETE) is still
// there, to be observed: the kubelet's pod manager keeps it, and
// DeleteOrphans or Sync deletes it.
func (m *Manager) Split(pods []*v1.Pod, removed bool) []*v1.Pod {
	rest := pods[:0:0]
	for _, p := range pods {
		switch {
		case !IsMirrorPod(p):
			rest = append(rest, p)
		case removed:
			m.Forget(p)
		default:
			m.Observe(p)
		}
	}
	return rest
}

// StatusTarget says where a pod's API status goes, in the form of
// podstatus.APIWriterConfig.MirrorPodFor: an API pod's to itself (static
// false), a static pod's to its mirror pod (nil until there is one).
func (m *Manager) StatusTarget(pod *v1.Pod) (mirror *v1.Pod, static bool) {
	if pod.Annotations[ConfigSourceAnnotation] == "api" {
		return nil, false
	}
	return m.Mirror(pod), true
}
