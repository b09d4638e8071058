package allocation_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/allocation"
)

// A pod admitted with 100m is resized to 200m: allocated at once (it
// fits), in progress until a sync has given its containers the new
// resources.
func Example() {
	fit := func(*v1.Pod, []*v1.Pod) (bool, string, string) { return true, "", "" }
	m, _ := allocation.New(allocation.Config{Fit: fit}) // StateDir "": in memory
	m.AddPod(pod("web", 1, "100m"))

	resized := pod("web", 2, "200m")
	if _, differs := m.AllocatedPod(resized); differs {
		m.HandleResize(resized, nil)
	}
	allocated, _ := m.AllocatedPod(resized)
	fmt.Println(cpuOf(allocated), m.Conditions("web")[0].Type)

	m.SyncDone(allocated, false, nil) // every container runs with 200m
	fmt.Println(len(m.Conditions("web")))
	// Output:
	// 200m PodResizeInProgress
	// 0
}
