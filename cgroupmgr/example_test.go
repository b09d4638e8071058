package cgroupmgr_test

import (
	"fmt"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
)

// A pod's cgroup name, as each driver writes it.
func Example() {
	name, _ := cgroupmgr.NewCgroupName(cgroupmgr.RootCgroupName, "kubepods", "burstable", "pod1234")
	fmt.Println(cgroupmgr.DriverCgroupfs.Path(name))
	fmt.Println(cgroupmgr.DriverSystemd.Path(name))
	// Output:
	// /kubepods/burstable/pod1234
	// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice
}
