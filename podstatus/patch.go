package podstatus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// mergeList is a list of v1.PodStatus the API server merges element by
// element (patchStrategy merge), by the field key of its elements.
type mergeList struct {
	key        string
	retainKeys bool // patchStrategy merge,retainKeys
}

// statusList says which fields of v1.PodStatus are merge lists; its
// other lists are replaced whole, as are the lists of the objects it holds
// (none of them has a patch strategy).
func statusList(field string) (mergeList, bool) {
	switch field {
	case "conditions":
		return mergeList{key: "type"}, true
	case "hostIPs", "podIPs":
		return mergeList{key: "ip"}, true
	case "resourceClaimStatuses":
		return mergeList{key: "name", retainKeys: true}, true
	case "nodeAllocatableResourceClaimStatuses":
		return mergeList{key: "resourceClaimName"}, true
	}
	return mergeList{}, false
}

// StatusPatch is the patch the kubelet's statusutil.PatchPodStatus sends
// to take a pod's API status from old to status: a strategic-merge patch
// (for pods/status) with metadata.uid set, which the API server takes as a
// precondition, so it never lands on a pod recreated with the same name.
// unchanged: the patch carries nothing but the UID, and need not be sent.
//
// It gives what strategicpatch.CreateTwoWayMergePatch gives for v1.Pod
// (the tests compare them), from the merge keys above: strategicpatch
// would compile the OpenAPI packages into podstatus.
func StatusPatch(uid types.UID, old, status v1.PodStatus) (patch []byte, unchanged bool, err error) {
	o, err := jsonObject(old)
	if err != nil {
		return nil, false, fmt.Errorf("podstatus: encoding the API status of pod UID %s: %w", uid, err)
	}
	n, err := jsonObject(status)
	if err != nil {
		return nil, false, fmt.Errorf("podstatus: encoding the status of pod UID %s: %w", uid, err)
	}
	p := map[string]any{"metadata": map[string]any{"uid": string(uid)}}
	d := diffObjects(o, n, true, false)
	if len(d) > 0 {
		p["status"] = d
	}
	patch, err = json.Marshal(p)
	return patch, len(d) == 0, err
}

// jsonObject is v as the API server sees it (numbers kept as written).
func jsonObject(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	return m, dec.Decode(&m)
}

// diffObjects is strategicpatch's diffMaps: what is new or changed in n,
// null for what n lacks, objects diffed field by field, lists replaced
// unless status (n is a v1.PodStatus) and statusList says they merge.
func diffObjects(o, n map[string]any, status, retainKeys bool) map[string]any {
	patch := map[string]any{}
	for k, nv := range n {
		ov, ok := o[k]
		if !ok {
			patch[k] = nv
			continue
		}
		switch nv := nv.(type) {
		case map[string]any:
			if ov, ok := ov.(map[string]any); ok {
				if d := diffObjects(ov, nv, false, false); len(d) > 0 {
					patch[k] = d
				}
				continue
			}
		case []any:
			if ml, ok := statusList(k); ok && status {
				if ov, ok := ov.([]any); ok {
					diffMergeList(patch, k, ov, nv, ml)
					continue
				}
			}
		}
		if !reflect.DeepEqual(ov, nv) {
			patch[k] = nv
		}
	}
	for k := range o {
		if _, ok := n[k]; !ok {
			patch[k] = nil
		}
	}
	if retainKeys && len(patch) > 0 {
		keys := make([]any, 0, len(n))
		for _, k := range sortedKeys(n) {
			if n[k] != nil {
				keys = append(keys, k)
			}
		}
		patch["$retainKeys"] = keys
	}
	return patch
}

// diffMergeList puts into patch the changes from o to n of the merge list
// field: added elements whole, changed ones as their diff with the key,
// removed ones as {"$patch": "delete"}, and when anything changed (order
// included) the new order as $setElementOrder/<field>.
func diffMergeList(patch map[string]any, field string, o, n []any, ml mergeList) {
	old := make(map[string]map[string]any, len(o))
	for _, e := range o {
		if m, ok := e.(map[string]any); ok {
			old[keyOf(m, ml.key)] = m
		}
	}
	var changes []any
	kept := make(map[string]bool, len(n))
	order := make([]any, 0, len(n))
	sameOrder := len(o) == len(n)
	for i, e := range n {
		m, _ := e.(map[string]any)
		k := keyOf(m, ml.key)
		kept[k] = true
		order = append(order, map[string]any{ml.key: m[ml.key]})
		if sameOrder {
			om, _ := o[i].(map[string]any)
			sameOrder = keyOf(om, ml.key) == k
		}
		om, ok := old[k]
		if !ok {
			changes = append(changes, m)
			continue
		}
		if d := diffObjects(om, m, false, ml.retainKeys); len(d) > 0 {
			d[ml.key] = m[ml.key]
			changes = append(changes, d)
		}
	}
	for _, k := range sortedKeys(old) {
		if !kept[k] {
			changes = append(changes, map[string]any{ml.key: old[k][ml.key], "$patch": "delete"})
		}
	}
	if len(changes) > 0 {
		patch[field] = changes
	}
	if len(changes) > 0 || !sameOrder {
		patch["$setElementOrder/"+field] = order
	}
}

func keyOf(m map[string]any, key string) string { return fmt.Sprint(m[key]) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
