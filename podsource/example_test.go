package podsource_test

import (
	"fmt"

	"github.com/nodekit-dev/nodekit/podsource"
)

// A manifest parsed as the kubelet's URL source does: each static pod is
// named after the node and given a UID from the URL and the kubelet's
// defaults; an invalid one is refused with the field and the value, and
// the others still run.
func Example() {
	manifest := []byte(`apiVersion: v1
kind: PodList
items:
- metadata: {name: web}
  spec:
    containers:
    - {name: c, image: nginx:1}
- metadata: {name: bad}
  spec:
    restartPolicy: Sometimes
    containers:
    - {name: c, image: nginx:1}
`)
	parsed, _ := podsource.Parse(manifest, podsource.ParseOptions{Kind: podsource.SourceHTTP,
		Origin: "http://127.0.0.1:8080/pods", NodeName: "node-1", AllowList: true})
	for _, p := range parsed {
		if p.Err != nil {
			fmt.Println(p.Key, "refused:", p.Err.Fields[0].Field, p.Err.Fields[0].BadValue)
			continue
		}
		fmt.Println(p.Pod.Namespace+"/"+p.Pod.Name, p.Pod.Spec.RestartPolicy, p.Pod.Spec.DNSPolicy, len(p.Pod.UID))
	}
	// Output:
	// default/web-node-1 Always ClusterFirst 32
	// default/bad refused: items[1].spec.restartPolicy Sometimes
}
