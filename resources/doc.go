// Package resources holds the kubelet's arithmetic that turns a pod's requests
// and limits into Linux resource settings: the pod QoS class, CPU shares, CFS
// quota, memory limits and OOM score adjustments.
//
// It is kept in one place so that the container runtime manager (package
// runtime, which sets per-container resources through CRI) and the cgroup
// manager (package cgroupmgr, which sizes the QoS and pod cgroups) always agree.
// Every formula and constant matches pkg/kubelet/cm and pkg/kubelet/qos:
//
//	resources.MilliCPUToShares(100)            // 102
//	resources.MilliCPUToQuota(250, 100000)     // 25000 µs per 100 ms
//	resources.PodQOSClass(pod)                 // v1.PodQOSBurstable
//	r := resources.ContainerResources(pod, &pod.Spec.Containers[0], resources.Options{MemoryCapacity: capacity})
//	// r.CPUShares, r.CPUQuota, r.CPUPeriod, r.MemoryLimitInBytes, r.OOMScoreAdj
package resources
