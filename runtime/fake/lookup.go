package fake

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Lookup errors, worded like containerd's truncindex and errdefs so that
// messages match.
var (
	errNotFound    = errors.New("not found")
	errEmptyPrefix = errors.New("prefix can't be empty")
)

// findSandboxLocked finds a sandbox by ID or unique ID prefix.
func (r *Runtime) findSandboxLocked(id string) (*sandbox, error) {
	return findByPrefix(r.st.sandboxes, id)
}

// findContainerLocked finds a container by ID or unique ID prefix.
func (r *Runtime) findContainerLocked(id string) (*container, error) {
	return findByPrefix(r.st.containers, id)
}

// findByPrefix resolves id the way containerd's stores do: an exact ID, or
// a prefix matching exactly one ID.
func findByPrefix[T any](m map[string]T, id string) (T, error) {
	var zero T
	if id == "" {
		return zero, errEmptyPrefix
	}
	if v, ok := m[id]; ok {
		return v, nil
	}
	found, n := zero, 0
	for k, v := range m {
		if strings.HasPrefix(k, id) {
			found = v
			n++
		}
	}
	switch n {
	case 0:
		return zero, errNotFound
	case 1:
		return found, nil
	default:
		return zero, fmt.Errorf("multiple IDs found with provided prefix: %s", id)
	}
}

func isNotFound(err error) bool { return errors.Is(err, errNotFound) }

// wrapLookup turns a lookup error into the status containerd would send:
// NotFound for a missing object, Unknown otherwise.
func wrapLookup(err error, format string, args ...any) error {
	code := codes.Unknown
	if isNotFound(err) {
		code = codes.NotFound
	}
	return status.Error(code, fmt.Sprintf(format, args...)+": "+err.Error())
}

// matchLabels reports whether labels has every pair of sel.
// podUIDLabel is the label the kubelet filters a pod's objects by.
const podUIDLabel = "io.kubernetes.pod.uid"

func matchLabels(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// deleteItem removes v from s, keeping the order.
func deleteItem[T comparable](s []T, v T) []T {
	if i := slices.Index(s, v); i >= 0 {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
