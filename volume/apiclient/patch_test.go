package apiclient

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The claim status patch is the kubelet's createPVCPatch: strategicpatch
// over the whole claim, with the old resourceVersion added.
func TestClaimStatusPatchIsTheKubelets(t *testing.T) {
	base := func() *v1.PersistentVolumeClaim {
		return &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", ResourceVersion: "41"},
			Spec:       v1.PersistentVolumeClaimSpec{Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Gi")}}},
			Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
				Conditions: []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue},
					{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue}},
				AllocatedResourceStatuses: map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}},
		}
	}
	for _, tc := range []struct {
		name string
		mod  func(*v1.PersistentVolumeClaim)
	}{
		{"nothing", func(*v1.PersistentVolumeClaim) {}},
		{"resize in progress", func(c *v1.PersistentVolumeClaim) {
			c.Status.AllocatedResourceStatuses[v1.ResourceStorage] = v1.PersistentVolumeClaimNodeResizeInProgress
		}},
		{"resize done (the kubelet's MarkFSResizeFinished)", func(c *v1.PersistentVolumeClaim) {
			c.Status.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Gi")}
			c.Status.Conditions = c.Status.Conditions[:1]
			c.Status.AllocatedResourceStatuses = nil
		}},
		{"a condition changed and one added", func(c *v1.PersistentVolumeClaim) {
			c.Status.Conditions[0].Status = v1.ConditionFalse
			c.Status.Conditions = append(c.Status.Conditions, v1.PersistentVolumeClaimCondition{Type: "ModifyingVolume", Status: v1.ConditionTrue})
		}},
		{"access modes", func(c *v1.PersistentVolumeClaim) {
			c.Status.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			tc.mod(updated)
			for _, pair := range [][2]*v1.PersistentVolumeClaim{{old, updated}, {updated, old}} {
				patch, err := claimStatusPatch(pair[0], pair[1])
				require.NoError(t, err)
				assert.JSONEq(t, string(kubeletClaimPatch(t, pair[0], pair[1])), string(patch))
			}
		})
	}
}

func kubeletClaimPatch(t *testing.T, old, updated *v1.PersistentVolumeClaim) []byte {
	o, err := json.Marshal(old)
	require.NoError(t, err)
	n, err := json.Marshal(updated)
	require.NoError(t, err)
	p, err := strategicpatch.CreateTwoWayMergePatch(o, n, old)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(p, &m))
	m["metadata"] = map[string]any{"resourceVersion": old.ResourceVersion}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}
