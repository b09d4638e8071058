package csi

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// client is a registered driver's client and its node capabilities.
func (v *Volumes) client(ctx context.Context, driver string) (*Client, NodeCapabilities, error) {
	c, err := v.Drivers.Client(driver)
	if err != nil {
		return nil, NodeCapabilities{}, err
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return nil, NodeCapabilities{}, fmt.Errorf("NodeGetCapabilities of CSI driver %s: %w", driver, err)
	}
	return c, caps, nil
}

// publisher is what publishing a volume of the lifecycle mode needs: the
// driver's client and capabilities, and its CSIDriver (nil if none), which
// must allow the mode.
func (v *Volumes) publisher(ctx context.Context, driver string, mode storagev1.VolumeLifecycleMode) (*Client, NodeCapabilities, *storagev1.CSIDriver, error) {
	c, caps, err := v.client(ctx, driver)
	if err != nil {
		return nil, caps, nil, err
	}
	d, err := v.csiDriver(ctx, driver)
	if err != nil {
		return nil, caps, nil, err
	}
	if err := lifecycleMode(d, driver, mode); err != nil {
		return nil, caps, nil, err
	}
	return c, caps, d, nil
}

// csiDriver is the driver's CSIDriver object; nil when it has none (or
// there is no API): the API's defaults apply then.
func (v *Volumes) csiDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	if v.Objects == nil {
		return nil, nil
	}
	d, err := v.Objects.GetCSIDriver(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("CSIDriver %s: %w", name, err)
	}
	return d, nil
}

// fsGroupPolicy is the driver's, or the API's default.
func fsGroupPolicy(d *storagev1.CSIDriver) storagev1.FSGroupPolicy {
	if d == nil || d.Spec.FSGroupPolicy == nil {
		return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	}
	return *d.Spec.FSGroupPolicy
}

// supportsFSGroup is the kubelet's: the pod's fsGroup is applied to a
// writable volume when the policy is File, or ReadWriteOnceWithFSType
// with an fsType and a ReadWriteOnce(Pod) access mode; never with None.
func supportsFSGroup(policy storagev1.FSGroupPolicy, fsType string, modes []v1.PersistentVolumeAccessMode, fsGroup *int64, readOnly bool) bool {
	switch {
	case fsGroup == nil || readOnly || policy == storagev1.NoneFSGroupPolicy:
		return false
	case policy == storagev1.FileFSGroupPolicy:
		return true
	case fsType == "":
		return false
	}
	for _, m := range modes {
		if m == v1.ReadWriteOnce || m == v1.ReadWriteOncePod {
			return true
		}
	}
	return false
}

func podFSGroup(pod *v1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}

// podInfo adds to attrs (a copy) what the kubelet tells a driver whose
// CSIDriver has podInfoOnMount.
func podInfo(attrs map[string]string, pod *v1.Pod, ephemeral bool) map[string]string {
	out := maps.Clone(attrs)
	if out == nil {
		out = map[string]string{}
	}
	out["csi.storage.k8s.io/pod.name"] = pod.Name
	out["csi.storage.k8s.io/pod.namespace"] = pod.Namespace
	out["csi.storage.k8s.io/pod.uid"] = string(pod.UID)
	out["csi.storage.k8s.io/serviceAccount.name"] = pod.Spec.ServiceAccountName
	out["csi.storage.k8s.io/ephemeral"] = strconv.FormatBool(ephemeral)
	return out
}

// secret is the data of the secret ref names (field: which of the PV's
// refs it is, for the error), as the driver gets it; nil without a ref.
func (v *Volumes) secret(ctx context.Context, field string, ref *v1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	if v.Objects == nil {
		return nil, fmt.Errorf("fetching %s %s/%s failed: no API to read it from", field, ref.Namespace, ref.Name)
	}
	s, err := v.Objects.GetSecret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("fetching %s %s/%s failed: %w", field, ref.Namespace, ref.Name, err)
	}
	out := make(map[string]string, len(s.Data))
	for k, b := range s.Data {
		out[k] = string(b)
	}
	return out, nil
}
