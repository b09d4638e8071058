package podsource

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const node = "Node-1"

// manifest is a minimal valid pod manifest.
func manifest(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: c
    image: %s
`, name, image)
}

func testPod(source, name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid,
			Annotations: map[string]string{ConfigSourceAnnotation: source}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img:1"}}},
	}
}

func names(pods []*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
