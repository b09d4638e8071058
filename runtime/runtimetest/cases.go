package runtimetest

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/runtime"
)

func testVersion(s *suite) {
	v, err := s.tg.Client.Version(s.ctx, runtime.CRIVersion)
	require.NoError(s.t, err)
	assert.Equal(s.t, "v1", v.RuntimeApiVersion)
	assert.NotEmpty(s.t, v.RuntimeName)
	assert.NotEmpty(s.t, v.RuntimeVersion)
}

func testStatus(s *suite) {
	st, err := s.tg.Client.Status(s.ctx, false)
	require.NoError(s.t, err)
	conds := map[string]bool{}
	for _, c := range st.Status.Conditions {
		conds[c.Type] = c.Status
	}
	assert.True(s.t, conds[runtimeapi.RuntimeReady], "RuntimeReady")
	assert.True(s.t, conds[runtimeapi.NetworkReady], "NetworkReady")
}

func testSandboxLifecycle(s *suite) {
	id, cfg := s.sandbox("lifecycle", false)
	r, err := s.tg.Client.PodSandboxStatus(s.ctx, id, false)
	require.NoError(s.t, err)
	st := r.Status
	assert.Equal(s.t, id, st.Id)
	assert.Equal(s.t, runtimeapi.PodSandboxState_SANDBOX_READY, st.State)
	assert.Equal(s.t, cfg.Metadata.Name, st.Metadata.Name)
	assert.Equal(s.t, cfg.Metadata.Uid, st.Metadata.Uid)
	assert.Equal(s.t, "lifecycle", st.Labels["contract-test"])
	assert.Equal(s.t, "yes", st.Annotations["contract/annotation"])
	assert.NotZero(s.t, st.CreatedAt)
	require.NotNil(s.t, st.Network)
	assert.NotEmpty(s.t, st.Network.Ip, "a pod-network sandbox has an IP")
	assert.Equal(s.t, runtimeapi.NamespaceMode_POD, st.GetLinux().GetNamespaces().GetOptions().GetNetwork())

	require.NoError(s.t, s.tg.Client.StopPodSandbox(s.ctx, id))
	require.NoError(s.t, s.tg.Client.StopPodSandbox(s.ctx, id), "stop is idempotent")
	r, err = s.tg.Client.PodSandboxStatus(s.ctx, id, false)
	require.NoError(s.t, err)
	assert.Equal(s.t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, r.Status.State)

	require.NoError(s.t, s.tg.Client.RemovePodSandbox(s.ctx, id))
	_, err = s.tg.Client.PodSandboxStatus(s.ctx, id, false)
	assert.ErrorIs(s.t, err, runtime.ErrNotFound)
	require.NoError(s.t, s.tg.Client.RemovePodSandbox(s.ctx, id), "removing a removed sandbox is success")
}

func testHostNetworkSandbox(s *suite) {
	id, _ := s.sandbox("hostnet", true)
	r, err := s.tg.Client.PodSandboxStatus(s.ctx, id, false)
	require.NoError(s.t, err)
	assert.Equal(s.t, runtimeapi.NamespaceMode_NODE, r.Status.GetLinux().GetNamespaces().GetOptions().GetNetwork())
	assert.Empty(s.t, r.Status.GetNetwork().GetIp(), "a host-network sandbox reports no IP")
}

func testContainerLifecycle(s *suite) {
	sb, cfg := s.sandbox("ctr-lifecycle", false)
	id := s.container(sb, cfg, "web", "serve")
	st := s.status(id)
	assert.Equal(s.t, runtimeapi.ContainerState_CONTAINER_CREATED, st.State)
	assert.Equal(s.t, "web", st.Metadata.Name)
	assert.Equal(s.t, "web", st.Labels["contract-container"])
	assert.NotZero(s.t, st.CreatedAt)
	assert.Zero(s.t, st.StartedAt)
	assert.NotEmpty(s.t, st.ImageRef)

	require.NoError(s.t, s.tg.Client.StartContainer(s.ctx, id))
	st = s.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING)
	assert.NotZero(s.t, st.StartedAt)
	// Until testbin has installed its SIGTERM handler (it logs "listening
	// on" after), a stop kills it with 143, as it would any process.
	s.waitLog(st.LogPath, "stdout F listening on")
	assert.Error(s.t, s.tg.Client.StartContainer(s.ctx, id), "starting a running container fails")

	require.NoError(s.t, s.tg.Client.StopContainer(s.ctx, id, 10))
	st = s.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED)
	assert.Equal(s.t, int32(0), st.ExitCode, "testbin exits 0 on SIGTERM")
	assert.Equal(s.t, "Completed", st.Reason)
	assert.NotZero(s.t, st.FinishedAt)
	require.NoError(s.t, s.tg.Client.StopContainer(s.ctx, id, 10), "stopping an exited container is success")

	require.NoError(s.t, s.tg.Client.RemoveContainer(s.ctx, id))
	_, err := s.tg.Client.ContainerStatus(s.ctx, id, false)
	assert.ErrorIs(s.t, err, runtime.ErrNotFound)
}

func testExitCodes(s *suite) {
	sb, cfg := s.sandbox("exit-codes", false)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int32
		reason string
	}{
		{"exit0", []string{"exit", "0"}, 0, "Completed"},
		{"exit3", []string{"exit", "3"}, 3, "Error"},
		{"unknown", []string{"no-such-mode"}, 2, "Error"},
	} {
		id := s.started(sb, cfg, tc.name, tc.args...)
		st := s.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED)
		assert.Equal(s.t, tc.code, st.ExitCode, tc.name)
		assert.Equal(s.t, tc.reason, st.Reason, tc.name)
		// No order between the two: containerd 1.6 may stamp a fast exit
		// before it records the start.
		assert.NotZero(s.t, st.StartedAt, tc.name)
		assert.NotZero(s.t, st.FinishedAt, tc.name)
	}
}

func testExecSync(s *suite) {
	sb, cfg := s.sandbox("exec", false)
	id := s.started(sb, cfg, "sleeper", "sleep")
	s.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING)

	r, err := s.tg.Client.ExecSyncCmd(s.ctx, id, []string{"/testbin", "echo", "hi", "there"}, 10*time.Second)
	require.NoError(s.t, err)
	assert.Equal(s.t, "hi there\n", string(r.Stdout))
	assert.Equal(s.t, int32(0), r.ExitCode)

	r, err = s.tg.Client.ExecSyncCmd(s.ctx, id, []string{"/testbin", "exit", "3"}, 10*time.Second)
	require.NoError(s.t, err, "a non-zero exit is a result, not an error")
	assert.Equal(s.t, int32(3), r.ExitCode)

	r, err = s.tg.Client.ExecSyncCmd(s.ctx, id, []string{"/testbin", "stderr", "oops"}, 10*time.Second)
	require.NoError(s.t, err)
	assert.Equal(s.t, "oops\n", string(r.Stderr))

	_, _, err = s.tg.Client.ExecSync(s.ctx, id, []string{"/testbin", "exit", "4"}, 10*time.Second)
	var exitErr *runtime.ExitError
	require.ErrorAs(s.t, err, &exitErr)
	assert.Equal(s.t, int32(4), exitErr.Code)

	r, err = s.tg.Client.ExecSyncCmd(s.ctx, id, []string{"/no/such/binary"}, 10*time.Second)
	assert.True(s.t, err != nil || r.ExitCode != 0, "a missing binary fails")

	require.NoError(s.t, s.tg.Client.StopContainer(s.ctx, id, 10))
	s.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED)
	_, err = s.tg.Client.ExecSyncCmd(s.ctx, id, []string{"/testbin", "echo", "x"}, 10*time.Second)
	assert.Error(s.t, err, "exec in an exited container fails")
}

func testExecSyncTimeout(s *suite) {
	sb, cfg := s.sandbox("exec-timeout", false)
	id := s.started(sb, cfg, "sleeper", "sleep")
	s.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING)
	_, err := s.tg.Client.ExecSyncCmd(s.ctx, id, []string{"/testbin", "sleep", "30"}, time.Second)
	require.Error(s.t, err, "a command outliving its timeout fails")
	assert.ErrorIs(s.t, err, runtime.ErrDeadlineExceeded)
}

func testListFilters(s *suite) {
	sb1, cfg1 := s.sandbox("list-a", false)
	sb2, cfg2 := s.sandbox("list-b", false)
	c1 := s.started(sb1, cfg1, "one", "sleep")
	c2 := s.container(sb2, cfg2, "two", "sleep")
	s.waitState(c1, runtimeapi.ContainerState_CONTAINER_RUNNING)

	ids := func(cs []*runtimeapi.Container) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Id)
		}
		return out
	}
	got, err := s.tg.Client.ListContainers(s.ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb1})
	require.NoError(s.t, err)
	assert.Equal(s.t, []string{c1}, ids(got), "by sandbox")
	got, err = s.tg.Client.ListContainers(s.ctx, &runtimeapi.ContainerFilter{Id: c2})
	require.NoError(s.t, err)
	assert.Equal(s.t, []string{c2}, ids(got), "by id")
	got, err = s.tg.Client.ListContainers(s.ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"contract-container": "two"}})
	require.NoError(s.t, err)
	assert.Equal(s.t, []string{c2}, ids(got), "by label")
	got, err = s.tg.Client.ListContainers(s.ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb2,
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	require.NoError(s.t, err)
	assert.Empty(s.t, got, "created container is not running")
	got, err = s.tg.Client.ListContainers(s.ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb2,
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED}})
	require.NoError(s.t, err)
	assert.Equal(s.t, []string{c2}, ids(got), "by state")
	assert.Equal(s.t, "two", got[0].Metadata.Name)
	assert.Equal(s.t, sb2, got[0].PodSandboxId)

	sbs, err := s.tg.Client.ListPodSandbox(s.ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"contract-test": "list-b"}})
	require.NoError(s.t, err)
	require.Len(s.t, sbs, 1, "sandbox by label")
	assert.Equal(s.t, sb2, sbs[0].Id)
	sbs, err = s.tg.Client.ListPodSandbox(s.ctx, &runtimeapi.PodSandboxFilter{Id: sb1})
	require.NoError(s.t, err)
	require.Len(s.t, sbs, 1, "sandbox by id")
	assert.Equal(s.t, "list-a", sbs[0].Metadata.Name)
	require.NoError(s.t, s.tg.Client.StopPodSandbox(s.ctx, sb1))
	sbs, err = s.tg.Client.ListPodSandbox(s.ctx, &runtimeapi.PodSandboxFilter{Id: sb1,
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	require.NoError(s.t, err)
	assert.Empty(s.t, sbs, "stopped sandbox is not ready")
}

func testNotFound(s *suite) {
	const missing = "0000000000000000000000000000000000000000000000000000000000000000"
	_, err := s.tg.Client.ContainerStatus(s.ctx, missing, false)
	assert.ErrorIs(s.t, err, runtime.ErrNotFound, "ContainerStatus")
	_, err = s.tg.Client.PodSandboxStatus(s.ctx, missing, false)
	assert.ErrorIs(s.t, err, runtime.ErrNotFound, "PodSandboxStatus")
	assert.ErrorIs(s.t, s.tg.Client.StartContainer(s.ctx, missing), runtime.ErrNotFound, "StartContainer")
	assert.NoError(s.t, s.tg.Client.StopContainer(s.ctx, missing, 1), "StopContainer of a missing container is success")
	assert.NoError(s.t, s.tg.Client.RemoveContainer(s.ctx, missing), "RemoveContainer")
	assert.NoError(s.t, s.tg.Client.StopPodSandbox(s.ctx, missing), "StopPodSandbox")
	assert.NoError(s.t, s.tg.Client.RemovePodSandbox(s.ctx, missing), "RemovePodSandbox")
	_, err = s.tg.Client.CreateContainer(s.ctx, missing, s.containerConfig("x", "sleep"), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "x", Namespace: "x", Uid: "x"}})
	assert.Error(s.t, err, "CreateContainer in a missing sandbox")
}

func testStopSandboxStopsContainers(s *suite) {
	sb, cfg := s.sandbox("stop-all", false)
	id := s.started(sb, cfg, "sleeper", "sleep")
	s.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING)
	require.NoError(s.t, s.tg.Client.StopPodSandbox(s.ctx, sb))
	st := s.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED)
	assert.NotZero(s.t, st.FinishedAt)
}

func testRemoveSandboxRemovesContainers(s *suite) {
	sb, cfg := s.sandbox("remove-all", false)
	id := s.started(sb, cfg, "sleeper", "sleep")
	s.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING)
	require.NoError(s.t, s.tg.Client.StopPodSandbox(s.ctx, sb))
	require.NoError(s.t, s.tg.Client.RemovePodSandbox(s.ctx, sb))
	_, err := s.tg.Client.ContainerStatus(s.ctx, id, false)
	assert.ErrorIs(s.t, err, runtime.ErrNotFound)
}

func testCreateInStoppedSandbox(s *suite) {
	sb, cfg := s.sandbox("stopped", false)
	require.NoError(s.t, s.tg.Client.StopPodSandbox(s.ctx, sb))
	_, err := s.tg.Client.CreateContainer(s.ctx, sb, s.containerConfig("late", "sleep"), cfg)
	assert.Error(s.t, err, "a stopped sandbox takes no new containers")
}

func testDuplicateNames(s *suite) {
	sb, cfg := s.sandbox("dup", false)
	s.container(sb, cfg, "same", "sleep")
	_, err := s.tg.Client.CreateContainer(s.ctx, sb, s.containerConfig("same", "sleep"), cfg)
	assert.Error(s.t, err, "same name and attempt in one sandbox")
	other := s.containerConfig("same", "sleep")
	other.Metadata.Attempt = 1
	_, err = s.tg.Client.CreateContainer(s.ctx, sb, other, cfg)
	assert.NoError(s.t, err, "a new attempt may reuse the name")

	_, err = s.tg.Client.RunPodSandbox(s.ctx, cfg, "")
	assert.Error(s.t, err, "same sandbox name, namespace, uid and attempt")
}

func testContainerLogs(s *suite) {
	sb, cfg := s.sandbox("logs", false)
	id := s.started(sb, cfg, "echo", "echo", "hello", "logs")
	st := s.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED)
	require.Equal(s.t, filepath.Join(cfg.LogDirectory, "echo.log"), st.LogPath)
	s.waitLog(st.LogPath, "stdout F hello logs")
}

// waitLog waits until a line of the CRI log (without its timestamp) starts
// with prefix.
func (s *suite) waitLog(path, prefix string) {
	s.t.Helper()
	deadline := time.Now().Add(s.tg.Timeout)
	for {
		for _, l := range readCRILog(s, path) {
			if strings.HasPrefix(l, prefix) {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("log %s: no line %q: %q", path, prefix, readCRILog(s, path))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readCRILog returns "stream tag message" of each line of a CRI log file,
// waiting briefly for the runtime to flush it.
func readCRILog(s *suite, path string) []string {
	deadline := time.Now().Add(s.tg.Timeout)
	for {
		f, err := os.Open(path)
		if err == nil {
			var out []string
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				ts, rest, ok := strings.Cut(sc.Text(), " ")
				_, perr := time.Parse(time.RFC3339Nano, ts)
				require.True(s.t, ok && perr == nil, "CRI log line %q starts with an RFC3339Nano timestamp", sc.Text())
				out = append(out, rest)
			}
			f.Close()
			if len(out) > 0 {
				return out
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("log %s: nothing logged (%v)", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testImages(s *suite) {
	imgs, err := s.tg.Client.ListImages(s.ctx, nil)
	require.NoError(s.t, err)
	found := false
	for _, im := range imgs {
		for _, tag := range im.RepoTags {
			found = found || tag == s.tg.TestImage
		}
	}
	assert.True(s.t, found, "ListImages has %s", s.tg.TestImage)

	st, err := s.tg.Client.ImageStatus(s.ctx, &runtimeapi.ImageSpec{Image: s.tg.TestImage}, false)
	require.NoError(s.t, err)
	require.NotNil(s.t, st.Image)
	assert.Contains(s.t, st.Image.RepoTags, s.tg.TestImage)
	assert.True(s.t, strings.HasPrefix(st.Image.Id, "sha256:"), "image ID %q", st.Image.Id)
	assert.NotZero(s.t, st.Image.Size)

	byID, err := s.tg.Client.ImageStatus(s.ctx, &runtimeapi.ImageSpec{Image: st.Image.Id}, false)
	require.NoError(s.t, err)
	require.NotNil(s.t, byID.Image, "status by ID")
	assert.Equal(s.t, st.Image.Id, byID.Image.Id)

	st, err = s.tg.Client.ImageStatus(s.ctx, &runtimeapi.ImageSpec{Image: "nodekit.local/absent:1"}, false)
	require.NoError(s.t, err, "absent image is not an error")
	assert.Nil(s.t, st.Image)

	_, err = s.tg.Client.PullImage(s.ctx, &runtimeapi.ImageSpec{Image: "nodekit.local/absent:1"}, nil, nil)
	assert.Error(s.t, err, "pulling from nowhere fails")
}

func testRemoveImage(s *suite) {
	if s.tg.RemovableImage == "" || s.tg.LoadImage == nil {
		s.t.Fatal("Target.RemovableImage and LoadImage are required")
	}
	ref := s.tg.RemovableImage
	s.tg.LoadImage(s.t, ref)
	spec := &runtimeapi.ImageSpec{Image: ref}
	st, err := s.tg.Client.ImageStatus(s.ctx, spec, false)
	require.NoError(s.t, err)
	require.NotNil(s.t, st.Image, "removable image loaded")
	require.NoError(s.t, s.tg.Client.RemoveImage(s.ctx, spec))
	st, err = s.tg.Client.ImageStatus(s.ctx, spec, false)
	require.NoError(s.t, err)
	assert.Nil(s.t, st.Image, "image gone after RemoveImage")
	require.NoError(s.t, s.tg.Client.RemoveImage(s.ctx, spec), "removing it again is success")
	s.tg.LoadImage(s.t, ref)
}

// testContainerEvents: runtimes either stream events or answer
// Unimplemented (containerd 1.6); either is within the contract.
func testContainerEvents(s *suite) {
	ch := make(chan *runtimeapi.ContainerEventResponse, 100)
	errc := make(chan error, 1)
	established := make(chan struct{})
	go func() {
		errc <- s.tg.Client.GetContainerEvents(s.ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	unimplemented := func(err error) {
		require.True(s.t, errors.Is(err, runtime.ErrUnimplemented), "GetContainerEvents ended: %v", err)
	}
	// The stream counts as established once opened, but a runtime without
	// events answers only on the first receive: give it that long.
	select {
	case err := <-errc:
		unimplemented(err)
		return
	case <-established:
	case <-time.After(s.tg.Timeout):
		s.t.Fatal("GetContainerEvents neither opened nor failed")
	}
	select {
	case err := <-errc:
		unimplemented(err)
		return
	case <-time.After(200 * time.Millisecond):
	}
	sb, cfg := s.sandbox("events", false)
	id := s.started(sb, cfg, "ev", "sleep")
	want := []runtimeapi.ContainerEventType{runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT}
	timeout := time.After(s.tg.Timeout)
	for len(want) > 0 {
		select {
		case err := <-errc:
			s.t.Fatalf("event stream ended: %v", err)
		case ev := <-ch:
			if ev.ContainerId == id && ev.ContainerEventType == want[0] {
				assert.NotNil(s.t, ev.PodSandboxStatus, "event carries the sandbox status")
				want = want[1:]
			}
		case <-timeout:
			s.t.Fatalf("no %s event for %s", want[0], id)
		}
	}
}
