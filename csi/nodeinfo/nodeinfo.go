// Package nodeinfo records a node's CSI drivers in the API as the
// kubelet's node info manager does: the Node's
// csi.volume.kubernetes.io/nodeid annotation (a JSON map of driver name
// to the driver's node ID) and the topology labels a driver reports, and
// the CSINode object named after the node, owned by the Node, listing each
// driver's node ID, topology keys and volume limit. It is package csi's
// NodeInfo over client-go, a package of its own so that csi compiles
// without client-go.
//
//	info := nodeinfo.New(nodeinfo.Config{Client: client, NodeName: "node-1"}) // a kubeapi.Interface
//	err := info.InitializeCSINode(ctx) // once the Node is registered
//	drivers := csi.NewRegistry(csi.RegistryConfig{NodeInfo: info})
package nodeinfo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/kubeapi"
)

// AnnotationNodeID is the Node annotation mapping drivers to node IDs.
const AnnotationNodeID = "csi.volume.kubernetes.io/nodeid"

// Client is the part of the API client a Manager calls: a
// kubeapi.Interface, or a client-go clientset through
// kubeapi/clientgo.Adapt.
type Client interface {
	Nodes() kubeapi.StatusClient[*v1.Node, *v1.NodeList]
	CSINodes() kubeapi.Client[*storagev1.CSINode, *storagev1.CSINodeList]
}

// Config configures a Manager.
type Config struct {
	Client   Client
	NodeName string
}

// Manager is the node info manager of one node.
type Manager struct{ cfg Config }

var _ csi.NodeInfo = (*Manager)(nil)

// New checks cfg.
func New(cfg Config) (*Manager, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("nodeinfo: Config.Client and Config.NodeName are required")
	}
	return &Manager{cfg: cfg}, nil
}

// InitializeCSINode makes sure the node's CSINode exists and is owned by
// the Node as it is now (a CSINode left by a Node of the same name that
// was deleted is deleted, and made again): the kubelet's
// InitializeCSINodeWithAnnotation, which the scheduler's volume limits and
// the external provisioner read.
func (m *Manager) InitializeCSINode(ctx context.Context) error {
	node, err := m.cfg.Client.Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("nodeinfo: %w", err)
	}
	cn, err := m.cfg.Client.CSINodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = m.create(ctx, node)
		return err
	case err != nil:
		return fmt.Errorf("nodeinfo: %w", err)
	}
	if !ownedBy(cn, node) {
		if err := m.cfg.Client.CSINodes().Delete(ctx, cn.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("nodeinfo: deleting CSINode %s of another Node: %w", cn.Name, err)
		}
		_, err = m.create(ctx, node)
		return err
	}
	return nil
}

func ownedBy(cn *storagev1.CSINode, node *v1.Node) bool {
	for _, o := range cn.OwnerReferences {
		if o.Kind == "Node" && o.Name == node.Name && o.UID == node.UID {
			return true
		}
	}
	return false
}

func (m *Manager) create(ctx context.Context, node *v1.Node) (*storagev1.CSINode, error) {
	cn, err := m.cfg.Client.CSINodes().Create(ctx, &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("nodeinfo: creating CSINode %s: %w", node.Name, err)
	}
	return cn, nil
}

// InstallDriver records a registered driver: its node ID in the Node's
// annotation, its topology as Node labels (a label already there with
// another value is an error, as in the kubelet), and its entry in the
// CSINode.
func (m *Manager) InstallDriver(ctx context.Context, driver string, info csi.DriverInfo) error {
	if info.NodeID == "" {
		return errors.New("error adding CSI driver node info: driverNodeID must not be empty")
	}
	err := m.updateNode(ctx, func(node *v1.Node) (bool, error) {
		ids, err := nodeIDs(node)
		if err != nil {
			return false, err
		}
		changed := ids[driver] != info.NodeID
		ids[driver] = info.NodeID
		for k, v := range info.Topology {
			if cur, ok := node.Labels[k]; ok && cur != v {
				return false, fmt.Errorf("detected topology value collision: driver reported %q:%q but existing label is %q:%q", k, v, k, cur)
			}
		}
		for k, v := range info.Topology {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			changed = changed || node.Labels[k] != v
			node.Labels[k] = v
		}
		return changed, setNodeIDs(node, ids)
	})
	if err != nil {
		return fmt.Errorf("error updating Node object with CSI driver node info: %w", err)
	}
	if err := m.updateCSINode(ctx, func(cn *storagev1.CSINode) bool { return installDriver(cn, driver, info) }); err != nil {
		return fmt.Errorf("error updating CSINode object with CSI driver node info: %w", err)
	}
	return nil
}

// UninstallDriver removes a driver from the CSINode and the annotation.
func (m *Manager) UninstallDriver(ctx context.Context, driver string) error {
	err := m.updateCSINode(ctx, func(cn *storagev1.CSINode) bool {
		n := len(cn.Spec.Drivers)
		cn.Spec.Drivers = slices.DeleteFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver })
		return len(cn.Spec.Drivers) != n
	})
	if err != nil {
		return fmt.Errorf("error uninstalling CSI driver from CSINode object %w", err)
	}
	err = m.updateNode(ctx, func(node *v1.Node) (bool, error) {
		ids, err := nodeIDs(node)
		if err != nil || ids[driver] == "" {
			return false, err
		}
		delete(ids, driver)
		return true, setNodeIDs(node, ids)
	})
	if err != nil {
		return fmt.Errorf("error removing CSI driver node info from Node object %w", err)
	}
	return nil
}

// installDriver puts driver's entry in cn; false when it was there as is.
func installDriver(cn *storagev1.CSINode, name string, info csi.DriverInfo) bool {
	keys := make([]string, 0, len(info.Topology))
	for k := range info.Topology {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := storagev1.CSINodeDriver{Name: name, NodeID: info.NodeID, TopologyKeys: keys}
	if info.MaxVolumes > 0 {
		count := int32(min(info.MaxVolumes, math.MaxInt32))
		want.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	for i, d := range cn.Spec.Drivers {
		if d.Name != name {
			continue
		}
		sort.Strings(d.TopologyKeys)
		if d.NodeID == want.NodeID && slices.Equal(d.TopologyKeys, want.TopologyKeys) && sameCount(d.Allocatable, want.Allocatable) {
			return false
		}
		cn.Spec.Drivers = slices.Delete(cn.Spec.Drivers, i, i+1)
		break
	}
	cn.Spec.Drivers = append(cn.Spec.Drivers, want)
	return true
}

func sameCount(a, b *storagev1.VolumeNodeResources) bool {
	count := func(r *storagev1.VolumeNodeResources) int32 {
		if r == nil || r.Count == nil {
			return 0
		}
		return *r.Count
	}
	return count(a) == count(b)
}

// nodeIDs reads the annotation's map.
func nodeIDs(node *v1.Node) (map[string]string, error) {
	ids := map[string]string{}
	if s := node.Annotations[AnnotationNodeID]; s != "" {
		if err := json.Unmarshal([]byte(s), &ids); err != nil {
			return nil, fmt.Errorf("failed to parse node's %q annotation value (%q) err=%w", AnnotationNodeID, s, err)
		}
	}
	return ids, nil
}

func setNodeIDs(node *v1.Node, ids map[string]string) error {
	if len(ids) == 0 {
		delete(node.Annotations, AnnotationNodeID)
		return nil
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[AnnotationNodeID] = string(b)
	return nil
}

// updateNode reads the Node, edits it, and updates it when edit changed
// it, again on a conflict.
func (m *Manager) updateNode(ctx context.Context, edit func(*v1.Node) (bool, error)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		node, err := m.cfg.Client.Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed, err := edit(node)
		if err != nil || !changed {
			return err
		}
		_, err = m.cfg.Client.Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// updateCSINode is updateNode for the CSINode, made first when missing or
// owned by a Node of the same name that is gone (its drivers are not this
// node's): an edit never lands in a CSINode that is replaced after.
func (m *Manager) updateCSINode(ctx context.Context, edit func(*storagev1.CSINode) bool) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := m.InitializeCSINode(ctx); err != nil {
			return err
		}
		cn, err := m.cfg.Client.CSINodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !edit(cn) {
			return nil
		}
		_, err = m.cfg.Client.CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
}
