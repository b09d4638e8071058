package gc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/gc"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// ctr is a container of pod uid, named name, created ago before epoch.
func ctr(id, uid, name string, state kc.ContainerState, ago time.Duration) gc.ContainerInfo {
	return gc.ContainerInfo{ID: id, PodUID: types.UID(uid), Name: name, SandboxID: "sb-" + uid, State: state, CreatedAt: epoch.Add(-ago)}
}

func dead(id, uid, name string, ago time.Duration) gc.ContainerInfo {
	return ctr(id, uid, name, kc.ContainerStateExited, ago)
}

func ids[T gc.ContainerInfo | gc.SandboxInfo](items []T) []string {
	out := []string{}
	for _, it := range items {
		switch v := any(it).(type) {
		case gc.ContainerInfo:
			out = append(out, v.ID)
		case gc.SandboxInfo:
			out = append(out, v.ID)
		}
	}
	return out
}

func gone(uids ...string) func(types.UID) bool {
	set := map[types.UID]bool{}
	for _, u := range uids {
		set[types.UID(u)] = true
	}
	return func(uid types.UID) bool { return set[uid] }
}

func policy(minAge time.Duration, perContainer, total int) gc.ContainerPolicy {
	return gc.ContainerPolicy{MinAge: minAge, MaxPerPodContainer: perContainer, MaxContainers: total}
}

// TestSelectContainers checks the kubelet's container GC rules
// (kuberuntime_gc.go's evictableContainers and evictContainers) one by one;
// the names say which.
func TestSelectContainers(t *testing.T) {
	def := gc.DefaultContainerPolicy()
	for _, tc := range []struct {
		name       string
		policy     gc.ContainerPolicy
		containers []gc.ContainerInfo
		removable  func(types.UID) bool
		want       []string // in removal order
	}{
		{
			name:   "defaults are the kubelet's: MinAge 0, one dead instance kept per container, no total limit",
			policy: def,
			containers: []gc.ContainerInfo{
				dead("a1", "p", "app", 3*time.Minute), dead("a2", "p", "app", 2*time.Minute), dead("a3", "p", "app", time.Minute),
			},
			want: []string{"a1", "a2"},
		},
		{
			name:   "running containers are never evictable",
			policy: policy(0, 0, 0),
			containers: []gc.ContainerInfo{
				ctr("r", "p", "app", kc.ContainerStateRunning, time.Hour), dead("d", "p", "app", time.Hour),
			},
			want: []string{"d"},
		},
		{
			name:   "created (never started) and unknown containers are dead, as exited ones",
			policy: policy(0, 0, -1),
			containers: []gc.ContainerInfo{
				ctr("c", "p", "a", kc.ContainerStateCreated, time.Hour), ctr("u", "p", "b", kc.ContainerStateUnknown, time.Hour),
				dead("e", "p", "c", time.Hour),
			},
			want: []string{"c", "u", "e"},
		},
		{
			name:   "containers created less than MinAge ago are not evictable",
			policy: policy(time.Minute, 0, -1),
			containers: []gc.ContainerInfo{
				dead("old", "p", "app", 2*time.Minute), dead("edge", "p", "app", time.Minute), dead("young", "p", "app", 30*time.Second),
			},
			want: []string{"old", "edge"},
		},
		{
			name:   "MinAge counts for gone pods too",
			policy: policy(time.Minute, 1, -1),
			containers: []gc.ContainerInfo{
				dead("old", "p", "app", 2*time.Minute), dead("young", "p", "app", 30*time.Second),
			},
			removable: gone("p"),
			want:      []string{"old"},
		},
		{
			name:   "the per-container limit keeps the newest N of each (pod, container name)",
			policy: policy(0, 2, -1),
			containers: []gc.ContainerInfo{
				dead("a1", "p", "app", 4*time.Minute), dead("a2", "p", "app", 3*time.Minute), dead("a3", "p", "app", 2*time.Minute),
				dead("a4", "p", "app", time.Minute),
				dead("s1", "p", "sidecar", 4*time.Minute), dead("s2", "p", "sidecar", 3*time.Minute),
				dead("q1", "q", "app", 5*time.Minute), dead("q2", "q", "app", time.Minute), dead("q3", "q", "app", 3*time.Minute),
			},
			want: []string{"a1", "a2", "q1"},
		},
		{
			name:       "a negative per-container limit keeps all",
			policy:     policy(0, -1, -1),
			containers: []gc.ContainerInfo{dead("a1", "p", "app", 2*time.Minute), dead("a2", "p", "app", time.Minute)},
			want:       []string{},
		},
		{
			name:   "dead containers of a deleted pod are removed promptly, all of them, whatever the limits",
			policy: policy(0, 5, -1),
			containers: []gc.ContainerInfo{
				dead("g1", "gone", "app", 2*time.Minute), dead("g2", "gone", "app", time.Minute), dead("g3", "gone", "init", time.Minute),
				dead("l1", "live", "app", time.Minute),
				ctr("gr", "gone", "other", kc.ContainerStateRunning, time.Minute),
			},
			removable: gone("gone"),
			want:      []string{"g1", "g2", "g3"},
		},
		{
			name:   "pods removable does not name are live: their newest instance stays",
			policy: def,
			containers: []gc.ContainerInfo{
				dead("p1", "p", "app", 2*time.Minute), dead("p2", "p", "app", time.Minute),
			},
			removable: gone("other"),
			want:      []string{"p1"},
		},
		{
			name:   "the total limit leaves each container an equal share, MaxContainers over the units",
			policy: policy(0, -1, 4),
			containers: []gc.ContainerInfo{
				dead("a1", "p", "a", 6*time.Minute), dead("a2", "p", "a", 5*time.Minute), dead("a3", "p", "a", 4*time.Minute),
				dead("b1", "q", "b", 9*time.Minute), dead("b2", "q", "b", 8*time.Minute), dead("b3", "q", "b", 7*time.Minute),
			},
			// 6 > 4: each of the 2 units keeps 4/2 = 2, its newest.
			want: []string{"a1", "b1"},
		},
		{
			name:   "the total limit's share is at least one, then the oldest go wherever they are",
			policy: policy(0, -1, 2),
			containers: []gc.ContainerInfo{
				dead("a1", "p", "a", 6*time.Minute), dead("a2", "p", "a", time.Minute),
				dead("b1", "q", "b", 9*time.Minute), dead("b2", "q", "b", 3*time.Minute),
				dead("c1", "r", "c", 2*time.Minute),
			},
			// 5 > 2: share max(2/3, 1) = 1 each leaves a2, b2, c1; still 3 > 2:
			// the oldest of those, b2, goes.
			want: []string{"a1", "b1", "b2"},
		},
		{
			name:   "the total limit applies after the per-container one",
			policy: policy(0, 1, 1),
			containers: []gc.ContainerInfo{
				dead("a1", "p", "a", 4*time.Minute), dead("a2", "p", "a", 2*time.Minute),
				dead("b1", "q", "b", 3*time.Minute),
			},
			want: []string{"a1", "b1"},
		},
		{
			name:   "a total limit of 0 removes every dead container",
			policy: policy(0, -1, 0),
			containers: []gc.ContainerInfo{
				dead("a1", "p", "a", 4*time.Minute), dead("b1", "q", "b", 3*time.Minute),
			},
			want: []string{"a1", "b1"},
		},
		{
			name:   "gone pods do not count towards the total limit",
			policy: policy(0, -1, 2),
			containers: []gc.ContainerInfo{
				dead("g1", "gone", "a", 4*time.Minute), dead("g2", "gone", "a", 3*time.Minute),
				dead("l1", "live", "a", 2*time.Minute), dead("l2", "live", "a", time.Minute),
			},
			removable: gone("gone"),
			want:      []string{"g1", "g2"},
		},
		{
			name:   "equal creation times are ordered by ID, so decisions are stable",
			policy: def,
			containers: []gc.ContainerInfo{
				dead("b", "p", "app", time.Minute), dead("a", "p", "app", time.Minute), dead("c", "p", "app", time.Minute),
			},
			want: []string{"c", "b"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := gc.SelectContainers(tc.policy, epoch, tc.containers, tc.removable)
			assert.Equal(t, tc.want, ids(got))
		})
	}
}

func sb(id, uid string, ready bool, ago time.Duration) gc.SandboxInfo {
	return gc.SandboxInfo{ID: id, PodUID: types.UID(uid), Ready: ready, CreatedAt: epoch.Add(-ago)}
}

// TestSelectSandboxes checks the kubelet's evictSandboxes rules.
func TestSelectSandboxes(t *testing.T) {
	in := func(sandbox string) gc.ContainerInfo {
		return gc.ContainerInfo{ID: "c-" + sandbox, SandboxID: sandbox, State: kc.ContainerStateExited}
	}
	for _, tc := range []struct {
		name       string
		sandboxes  []gc.SandboxInfo
		containers []gc.ContainerInfo
		removable  func(types.UID) bool
		want       []string
	}{
		{
			name:      "a live pod keeps its newest sandbox, even not ready; older inactive ones go, oldest first",
			sandboxes: []gc.SandboxInfo{sb("s1", "p", false, 3*time.Minute), sb("s3", "p", false, time.Minute), sb("s2", "p", false, 2*time.Minute)},
			want:      []string{"s1", "s2"},
		},
		{
			name:      "a ready sandbox is active and stays",
			sandboxes: []gc.SandboxInfo{sb("s1", "p", true, 3*time.Minute), sb("s2", "p", false, time.Minute)},
			removable: gone("p"),
			want:      []string{"s2"},
		},
		{
			name:       "a sandbox holding a container, in any state, is active and stays",
			sandboxes:  []gc.SandboxInfo{sb("s1", "p", false, 3*time.Minute), sb("s2", "p", false, time.Minute)},
			containers: []gc.ContainerInfo{in("s1")},
			want:       []string{},
		},
		{
			name:      "a gone pod loses every inactive sandbox, its newest too",
			sandboxes: []gc.SandboxInfo{sb("s1", "p", false, 2*time.Minute), sb("s2", "p", false, time.Minute), sb("l", "live", false, time.Minute)},
			removable: gone("p"),
			want:      []string{"s1", "s2"},
		},
		{
			name:       "a gone pod's sandbox with a container left stays",
			sandboxes:  []gc.SandboxInfo{sb("s1", "p", false, 2*time.Minute)},
			containers: []gc.ContainerInfo{in("s1")},
			removable:  gone("p"),
			want:       []string{},
		},
		{
			name:      "nil removable: every pod is live",
			sandboxes: []gc.SandboxInfo{sb("s1", "p", false, 2*time.Minute)},
			want:      []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ids(gc.SelectSandboxes(tc.sandboxes, tc.containers, tc.removable)))
		})
	}
}

// TestSelectPodLogDirs checks the kubelet's evictPodLogsDirectories rule.
func TestSelectPodLogDirs(t *testing.T) {
	dirs := []string{"ns_gone_uid-gone", "ns_live_uid-live", "ns_held_uid-held", "not-a-pod-dir", "ns_bad_uid_x", "ns_name_../x"}
	inRuntime := map[types.UID]bool{"uid-held": true}
	removable := func(uid types.UID) bool { return uid != "uid-live" }
	assert.Equal(t, []string{"ns_gone_uid-gone"}, gc.SelectPodLogDirs(dirs, inRuntime, removable),
		"a gone pod's directory goes; a live pod's, one the runtime has a sandbox of, and names not made by podpath stay")
	assert.Empty(t, gc.SelectPodLogDirs(dirs, nil, nil), "nil removable: no pod is gone")
}

func ExampleSelectContainers() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	dead := func(id, pod string, ago time.Duration) gc.ContainerInfo {
		return gc.ContainerInfo{ID: id, PodUID: types.UID(pod), Name: "app", State: kc.ContainerStateExited, CreatedAt: now.Add(-ago)}
	}
	containers := []gc.ContainerInfo{
		dead("web-1", "web", 3*time.Minute), dead("web-2", "web", 2*time.Minute), dead("web-3", "web", time.Minute),
		dead("job-1", "job", 5*time.Minute),
	}
	podGone := func(uid types.UID) bool { return uid == "job" }
	for _, c := range gc.SelectContainers(gc.DefaultContainerPolicy(), now, containers, podGone) {
		fmt.Println(c.ID)
	}
	// Output:
	// job-1
	// web-1
	// web-2
}
