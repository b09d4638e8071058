// Package fake is an in-memory CRI v1 runtime for unit tests and
// benchmarks of code that talks to a container runtime.
//
// A Runtime implements both runtimeapi.RuntimeServiceServer and
// runtimeapi.ImageServiceServer. Call its methods directly, or serve it
// over gRPC on a unix socket (Serve, Start, or Register on your own
// server) and point a real CRI client at it.
//
// The fake mirrors containerd 1.6's CRI plugin: the same state machine,
// the same gRPC codes and, where tests are likely to match on them, the
// same error messages (Runtime lists examples). A contract suite
// (runtime/runtimetest) runs the same tests against the fake and a real
// containerd; where the two differ, the fake is wrong. It goes beyond
// containerd 1.6 in three places, each easy to turn off with InjectError:
// it implements GetContainerEvents and RuntimeConfig (containerd 1.6
// answers codes.Unimplemented), and RunPodSandbox rejects empty metadata
// names, namespaces and UIDs (containerd accepts them).
//
//   - Nothing is executed: a container runs the Program its image's
//     Behavior chose (TestbinBehavior reproduces the project's test image).
//   - Exec, Attach and PortForward are served by a streaming server of the
//     fake's own on 127.0.0.1, with real SPDY or WebSocket streams.
//   - Images take no disk; ImageFsInfo reports a real mountpoint to statfs.
//   - Every time comes from WithClock: with a FakeClock, tests Step and
//     never sleep.
//   - InjectError, SetLatency, SetPullBehavior, SetRuntimeCondition,
//     SetContainerStats, SetImageFsInfo and Exit script the rest; Calls
//     counts calls.
//   - Returned messages are shared snapshots: treat them as read-only.
//
// Use:
//
//	clk := testingclock.NewFakeClock(time.Now())
//	rt := fake.New(fake.WithClock(clk), fake.WithImages(fake.PauseImage, fake.TestbinImage))
//	defer rt.Close()
//	sb, _ := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig})
//	c, _ := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
//		PodSandboxId: sb.PodSandboxId, SandboxConfig: podConfig,
//		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
//			Image: &runtimeapi.ImageSpec{Image: fake.TestbinImage}, Args: []string{"sleep", "5"}},
//	})
//	rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
//	clk.Step(5 * time.Second) // the container exits 0, reason "Completed"
//
//	stop, err := rt.Start("unix://" + filepath.Join(t.TempDir(), "cri.sock")) // over gRPC
//	defer stop()
package fake
