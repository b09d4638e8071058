package userns_test

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/userns"
)

// A hostUsers: false pod gets a 65536-long slot of host IDs, kept in its
// pod directory until released.
func Example() {
	root, _ := os.MkdirTemp("", "root")
	defer os.RemoveAll(root)
	m, err := userns.New(userns.Config{Layout: podpath.Layout{RootDir: root},
		Range:    func(uint32) (uint32, uint32, error) { return 65536, 65536 * 110, nil },
		Handlers: userns.HandlersFunc(func(string) (bool, error) { return true, nil }),
		Rand:     func(int) int { return 0 }})
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "pod-1"},
		Spec: v1.PodSpec{HostUsers: new(bool)}}
	host, length, err := m.PodMapping(pod, "")
	fmt.Println(host, length, err)
	m.Release(pod.UID)
	_, ok := m.Allocated(pod.UID)
	fmt.Println(ok)
	// Output:
	// 65536 65536 <nil>
	// false
}
