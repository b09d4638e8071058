package fake

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version reports RuntimeName "nodekit-fake" and RuntimeApiVersion "v1"
// unless set by options.
func (r *Runtime) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if err := r.enter(ctx, mVersion); err != nil {
		return nil, err
	}
	return r.version, nil
}

// Status reports the runtime conditions; RuntimeReady and NetworkReady are
// true unless changed by SetRuntimeCondition.
func (r *Runtime) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	if err := r.enter(ctx, mStatus); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.status, nil
}

// SetRuntimeCondition sets (or adds) the condition of type condType, e.g.
// runtimeapi.NetworkReady, as Status reports it.
func (r *Runtime) SetRuntimeCondition(condType string, ok bool, reason, message string) {
	c := &runtimeapi.RuntimeCondition{Type: condType, Status: ok, Reason: reason, Message: message}
	r.mu.Lock()
	defer r.mu.Unlock()
	conds := make([]*runtimeapi.RuntimeCondition, 0, len(r.st.conditions)+1)
	found := false
	for _, old := range r.st.conditions {
		if old.Type == condType {
			old, found = c, true
		}
		conds = append(conds, old)
	}
	if !found {
		conds = append(conds, c)
	}
	r.st.conditions = conds
	r.st.status = &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: conds}}
}

// RuntimeConfig reports the cgroupfs driver.
func (r *Runtime) RuntimeConfig(ctx context.Context, req *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	if err := r.enter(ctx, mRuntimeConfig); err != nil {
		return nil, err
	}
	return &runtimeapi.RuntimeConfigResponse{
		Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS},
	}, nil
}

// UpdateRuntimeConfig records the pod CIDR; see PodCIDR.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	if err := r.enter(ctx, mUpdateRuntimeConfig); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.podCIDR = req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// PodCIDR returns the CIDR last set by UpdateRuntimeConfig.
func (r *Runtime) PodCIDR() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.podCIDR
}
