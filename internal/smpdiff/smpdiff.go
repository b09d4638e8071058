// Package smpdiff computes two-way strategic merge patches, what
// apimachinery's strategicpatch.CreateTwoWayMergePatch gives, for objects
// whose merge lists the caller names: the pod, node and claim statuses a
// node agent writes. strategicpatch finds the merge keys in the types'
// OpenAPI schema, which compiles kube-openapi, gnostic and yaml v3 into
// the agent (about 2.6 MB of binary, resident in every agent); a node
// agent patches three statuses and knows their merge keys. Each caller's
// tests compare its patches with strategicpatch's.
package smpdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// List is a list the API server merges element by element (patchStrategy
// merge), by the field Key of its elements.
type List struct {
	Key        string
	RetainKeys bool // patchStrategy merge,retainKeys
}

// Lists are a type's merge lists by their path from the diffed object,
// fields joined with dots ("status.conditions"). Any other list is
// replaced whole, as the API server does with a list of no strategy.
type Lists map[string]List

// Object is v encoded as the API server sees it (numbers kept as written).
func Object(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	return m, dec.Decode(&m)
}

// Diff is the patch from o to n: what is new or changed in n, null for
// what n lacks, objects diffed field by field, merge lists element by
// element (with $setElementOrder and $patch: delete), other lists whole.
func Diff(o, n map[string]any, lists Lists) map[string]any {
	return diffObjects(o, n, "", lists, false)
}

func diffObjects(o, n map[string]any, path string, lists Lists, retainKeys bool) map[string]any {
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
				if d := diffObjects(ov, nv, path+k+".", lists, false); len(d) > 0 {
					patch[k] = d
				}
				continue
			}
		case []any:
			if ml, ok := lists[path+k]; ok {
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
		for _, k := range slices.Sorted(maps.Keys(n)) {
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
func diffMergeList(patch map[string]any, field string, o, n []any, ml List) {
	old := make(map[string]map[string]any, len(o))
	for _, e := range o {
		if m, ok := e.(map[string]any); ok {
			old[keyOf(m, ml.Key)] = m
		}
	}
	var changes []any
	kept := make(map[string]bool, len(n))
	order := make([]any, 0, len(n))
	sameOrder := len(o) == len(n)
	for i, e := range n {
		m, _ := e.(map[string]any)
		k := keyOf(m, ml.Key)
		kept[k] = true
		order = append(order, map[string]any{ml.Key: m[ml.Key]})
		if sameOrder {
			om, _ := o[i].(map[string]any)
			sameOrder = keyOf(om, ml.Key) == k
		}
		om, ok := old[k]
		if !ok {
			changes = append(changes, m)
			continue
		}
		if d := diffObjects(om, m, "", nil, ml.RetainKeys); len(d) > 0 {
			d[ml.Key] = m[ml.Key]
			changes = append(changes, d)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if !kept[k] {
			changes = append(changes, map[string]any{ml.Key: old[k][ml.Key], "$patch": "delete"})
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
