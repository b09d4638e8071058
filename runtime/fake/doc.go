// Package fake is an in-memory CRI v1 runtime for unit tests and
// benchmarks of code that talks to a container runtime.
//
// A Runtime implements both runtimeapi.RuntimeServiceServer and
// runtimeapi.ImageServiceServer. Call its methods directly, or serve it
// over gRPC on a unix socket (Serve, Start, or Register on your own
// server) and point a real CRI client at it.
//
// # Fidelity
//
// The fake mirrors containerd 1.6's CRI plugin: the same state machine,
// the same gRPC codes and, where tests are likely to match on them, the
// same error messages. A contract suite runs the same tests against the
// fake and a real containerd; where the two differ, the fake is wrong.
// Some examples of what that means:
//
//   - IDs are 64 hex digits and every call taking an ID also takes a
//     unique prefix of one.
//   - Names are reserved as containerd does (name_namespace_uid_attempt
//     for sandboxes); a duplicate fails with "... is reserved for ...".
//   - RemoveContainer, RemovePodSandbox and RemoveImage succeed for
//     unknown objects; StopContainer, StopPodSandbox, ContainerStatus and
//     PodSandboxStatus answer codes.NotFound; ImageStatus of an absent
//     image answers no image and no error.
//   - A failed StartContainer leaves the container EXITED with code 128
//     and reason "StartError"; SIGKILL is exit code 137, reason "Error".
//   - ListImages ignores its filter, as containerd 1.6 does.
//
// The fake goes beyond containerd 1.6 in three places, each easy to turn
// off with InjectError: it implements GetContainerEvents and RuntimeConfig
// (containerd 1.6 answers codes.Unimplemented), and RunPodSandbox rejects
// empty metadata names, namespaces and UIDs (containerd accepts them).
//
// # What containers do
//
// Nothing is executed. What a container does is a Program chosen, at
// CreateContainer, by the Behavior registered for its image: exit by
// itself after a while with some code, get OOM-killed, run until stopped,
// handle or ignore SIGTERM, print lines (written to the CRI log file when
// the sandbox has a log directory and the container a log path, and to
// attached clients), read lines from attached clients, answer exec'd
// commands. TestbinBehavior reproduces the project's test image
// (TestbinImage) mode by mode; other images default to DefaultBehavior.
//
// # Streaming
//
// Exec, Attach and PortForward answer URLs on a streaming server of the
// fake's own, k8s.io/cri-streaming as in containerd, listening on a
// 127.0.0.1 port from the first such call until Close: clients such as
// client-go's remotecommand and portforward get real SPDY or WebSocket
// streams. An exec runs the Program's Exec with the client's streams
// (ExecResult.Interactive reads stdin; a tty echoes input and prints
// "\r\n"), and a non-zero exit code reaches the client as its exit code.
// An attach gets what the container prints from then on, and feeds
// Program.Stdin when the container has Stdin. A port forward really dials
// the port: 127.0.0.1 for host-network sandboxes, the pod IP when it is a
// loopback address (the default), and fails otherwise.
//
// # Image filesystem
//
// Images take no disk: their sizes are made up from their IDs. ImageFsInfo
// reports one filesystem holding them all, whose used bytes add up those
// sizes, at a mountpoint on this machine (os.TempDir(), or
// WithImageFsMountpoint), where containers' writable layers are too.
// Consumers that statfs it for capacity, as the kubelet's image GC and
// Summary API do with containerd's snapshotter directory, then work
// unchanged; they see that filesystem's capacity and free space.
// SetImageFsInfo scripts any other answer.
//
// # Time
//
// All timestamps and delays come from the clock given WithClock. With a
// k8s.io/utils/clock/testing.FakeClock, tests advance time with Step and
// never sleep: a scripted exit happens inside Step, and a call waiting on
// the clock (stop grace period, exec timeout, latency, pull delay) has
// registered a timer once the clock has a new waiter.
//
// # Scripting
//
// InjectError and SetLatency script failures and slowness per CRI method;
// Calls counts calls; SetPullBehavior, SetRuntimeCondition,
// SetContainerStats, SetImageFsInfo and Exit script the rest.
//
// # Performance
//
// Sandboxes, containers and images are kept as immutable protobuf
// snapshots, replaced on every change, so List and Status calls share them
// without copying. Messages returned by the Runtime must therefore be
// treated as read-only.
//
// # Example
//
//	clk := testingclock.NewFakeClock(time.Now())
//	rt := fake.New(fake.WithClock(clk), fake.WithImages(fake.PauseImage, fake.TestbinImage))
//	defer rt.Close()
//
//	sb, _ := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig})
//	c, _ := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
//		PodSandboxId:  sb.PodSandboxId,
//		SandboxConfig: podConfig,
//		Config: &runtimeapi.ContainerConfig{
//			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
//			Image:    &runtimeapi.ImageSpec{Image: fake.TestbinImage},
//			Args:     []string{"sleep", "5"},
//		},
//	})
//	rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
//	clk.Step(5 * time.Second) // the container exits 0, reason "Completed"
//
// Over gRPC:
//
//	stop, err := rt.Start("unix://" + filepath.Join(t.TempDir(), "cri.sock"))
//	defer stop()
package fake
