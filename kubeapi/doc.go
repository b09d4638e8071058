// Package kubeapi is a node agent's Kubernetes API client: the objects a
// kubelet reads and writes (pods and their status, nodes, leases, events,
// what volumes read, CSI's objects, token and access reviews) over
// client-go's REST client, with a scheme of only those groups.
//
// Why not client-go's typed clientset: importing it registers every API
// group of Kubernetes in its scheme at start and links its discovery client
// (gnostic's OpenAPI descriptors): 8.7 MB of resident memory in an agent
// that speaks to five groups (TestMeasureInitMemory, #34). Each resource's
// interface has the method names and signatures of client-go's typed
// client, so a client-go clientset is an Interface too (kubeapi/clientgo).
//
//	cs, err := kubeapi.New(restConfig, httpClient)
//	pod, err := cs.Pods("default").Get(ctx, "web", metav1.GetOptions{})
//	_, err = cs.Pods("default").Patch(ctx, "web", types.StrategicMergePatchType, patch,
//		metav1.PatchOptions{}, "status")
//
// Each Resource is a value; making one costs nothing. Content types are
// the rest.Config's (the agent asks for protobuf, as the kubelet does).
package kubeapi
