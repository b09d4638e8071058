package podstatus

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/internal/smpdiff"
)

// statusLists are v1.PodStatus's merge lists; its other lists are
// replaced whole, as are the lists of the objects it holds (none of them
// has a patch strategy).
var statusLists = smpdiff.Lists{
	"conditions":                           {Key: "type"},
	"hostIPs":                              {Key: "ip"},
	"podIPs":                               {Key: "ip"},
	"resourceClaimStatuses":                {Key: "name", RetainKeys: true},
	"nodeAllocatableResourceClaimStatuses": {Key: "resourceClaimName"},
}

// StatusPatch is the patch the kubelet's statusutil.PatchPodStatus sends
// to take a pod's API status from old to status: a strategic-merge patch
// (for pods/status) with metadata.uid set, which the API server takes as a
// precondition, so it never lands on a pod recreated with the same name.
// unchanged: the patch carries nothing but the UID, and need not be sent.
//
// It gives what strategicpatch.CreateTwoWayMergePatch gives for v1.Pod
// (the tests compare them), from the merge keys above: strategicpatch
// would compile the OpenAPI packages into podstatus (see smpdiff).
func StatusPatch(uid types.UID, old, status v1.PodStatus) (patch []byte, unchanged bool, err error) {
	o, err := smpdiff.Object(old)
	if err != nil {
		return nil, false, fmt.Errorf("podstatus: encoding the API status of pod UID %s: %w", uid, err)
	}
	n, err := smpdiff.Object(status)
	if err != nil {
		return nil, false, fmt.Errorf("podstatus: encoding the status of pod UID %s: %w", uid, err)
	}
	p := map[string]any{"metadata": map[string]any{"uid": string(uid)}}
	d := smpdiff.Diff(o, n, statusLists)
	if len(d) > 0 {
		p["status"] = d
	}
	patch, err = json.Marshal(p)
	return patch, len(d) == 0, err
}
