// Package e2e holds nodekit's end-to-end tests: the reference agent
// (examples/kubelet) as a process of its own on the real containerd and
// kube-apiserver that hack/ starts, driven and checked from outside. It
// has no code of its own; its tests run with the build tag integration
// (hack/test.sh).
//
// TestAgentLifecycleOnContainerd drives the agent through manifests and
// its read-only API across a SIGKILL and a restart; TestMeasureAgent
// reports its start latency, CPU and RSS (README, Measuring).
// TestMeasureAPIStartup measures it, and the real kubelet when
// NODEKIT_KUBELET_BIN names one, on pods created through the API
// (hack/measure-api.sh).
//
// TestCSIStatefulSet (build tag csie2e; hack/csi-e2e.sh starts its
// cluster) runs a StatefulSet on CSI volumes served by the external
// provisioner, attacher and resizer and a fake driver.
//
// TestSoak churns API pods for a while (NODEKIT_SOAK, default 150s) while
// it kills the agent, restarts containerd, stops the apiserver, deletes the
// Node and changes the node's IP, then checks that nothing stayed stuck:
//
//	NODEKIT_SOAK=10m go test -tags integration -run TestSoak -timeout 30m ./e2e
package e2e
