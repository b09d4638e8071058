// Package nodestatus is the kubelet's Node in the API: registration, the
// status, and the heartbeat lease.
//
//   - Builder (New) computes the Node as the kubelet does: its labels
//     (kubernetes.io/hostname, os, arch, and --node-labels), taints
//     (--register-with-taints), addresses (InternalIP, Hostname), capacity
//     (cpu, memory, pods, ephemeral-storage, hugepages-*) and allocatable
//     (minus kube-reserved, system-reserved, the hard eviction thresholds
//     and hugepages; resources.NodeAllocatable), nodeInfo, daemonEndpoints,
//     status.images (the 50 largest) and the conditions MemoryPressure,
//     DiskPressure, PIDPressure and Ready with the kubelet's reasons and
//     messages. Ready is KubeletReady unless one of the Checks fails
//     (RuntimeCheck, NetworkCheck, CNIConfigCheck with libcni, PLEGCheck, or
//     the caller's): then KubeletNotReady with their messages joined.
//     MachineInfo comes from /proc, /sys and /etc (ReadMachineInfo).
//   - Builder.Register is tryRegisterWithAPIServer: create, or take over an
//     existing Node of the same name.
//   - Reporter registers (retrying 100ms..7s), writes the status as soon
//     as the node is Ready (fastStatusUpdateOnce: checked every 100ms, for
//     up to 120s), then computes it
//     every 10s (--node-status-update-frequency) and PATCHes it only when
//     it changed or 5m passed (nodeStatusReportFrequency), 5 tries per
//     period, with the kubelet's strategic-merge patch.
//   - APINode is the kubelet's node informer: the Node as the API has it,
//     by a watch of that one object, for admission (labels, taints).
//   - NewLease is the kubelet's Lease in kube-node-lease: 40s, renewed
//     every 10s, owned by the Node (what component-helpers' lease
//     controller does for the kubelet, over kubeapi, on the injected clock).
//
// Deliberate differences: a loopback --node-ip is accepted (the kubelet
// refuses it; nodekit's tests and many dev set-ups are loopback-only); a
// Node deleted while the agent runs is registered again (the kubelet only
// registers at start); images without any name are left out of
// status.images.
//
//	mi, err := nodestatus.ReadMachineInfo(nodestatus.MachinePaths{})
//	node, err := nodestatus.New(nodestatus.Config{NodeName: "node-1", NodeIP: "10.0.0.5", Machine: mi,
//		ContainerRuntimeVersion: "containerd://1.6.20", Images: criClient,
//		ReadyChecks: []nodestatus.Check{nodestatus.RuntimeCheck(criClient.RuntimeStatus),
//			nodestatus.NetworkCheck(criClient.RuntimeStatus), nodestatus.PLEGCheck(p.Healthy)}})
//	reporter, err := nodestatus.NewReporter(nodestatus.ReporterConfig{Client: client, Node: node}) // a kubeapi.Interface
//	go reporter.Run(ctx)
//	go nodestatus.NewLease(client, "node-1", 0, nil, nil).Run(ctx)
package nodestatus
