package fake

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// method numbers the CRI methods the fake implements, so that per-call
// bookkeeping is an array index rather than a map lookup.
type method int

const (
	mVersion method = iota
	mRunPodSandbox
	mStopPodSandbox
	mRemovePodSandbox
	mPodSandboxStatus
	mListPodSandbox
	mCreateContainer
	mStartContainer
	mStopContainer
	mRemoveContainer
	mListContainers
	mContainerStatus
	mUpdateContainerResources
	mReopenContainerLog
	mExecSync
	mExec
	mAttach
	mPortForward
	mContainerStats
	mListContainerStats
	mPodSandboxStats
	mListPodSandboxStats
	mUpdateRuntimeConfig
	mStatus
	mGetContainerEvents
	mRuntimeConfig
	mListImages
	mImageStatus
	mPullImage
	mRemoveImage
	mImageFsInfo
	numMethods
)

// methodNames are the CRI method names, as users pass them to InjectError.
var methodNames = [numMethods]string{
	"Version", "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox",
	"PodSandboxStatus", "ListPodSandbox", "CreateContainer", "StartContainer",
	"StopContainer", "RemoveContainer", "ListContainers", "ContainerStatus",
	"UpdateContainerResources", "ReopenContainerLog", "ExecSync", "Exec",
	"Attach", "PortForward", "ContainerStats", "ListContainerStats",
	"PodSandboxStats", "ListPodSandboxStats", "UpdateRuntimeConfig", "Status",
	"GetContainerEvents", "RuntimeConfig", "ListImages", "ImageStatus",
	"PullImage", "RemoveImage", "ImageFsInfo",
}

func lookupMethod(name string) method {
	for i, n := range methodNames {
		if n == name {
			return method(i)
		}
	}
	// A misspelt name would make a test silently inject nothing.
	panic(fmt.Sprintf("fake: unknown CRI method %q", name))
}

// faults holds injected errors and latencies.
type faults struct {
	latency [numMethods]atomic.Int64 // time.Duration

	// active counts methods with an injected error, so the common case
	// (none) costs one atomic load per call.
	active atomic.Int32
	mu     sync.Mutex
	errs   [numMethods]*injected
}

type injected struct {
	err   error
	times int // remaining; 0 means until cleared
}

// enter is the first thing every CRI method does: count the call, apply
// the scripted latency and return the scripted error, if any.
func (r *Runtime) enter(ctx context.Context, m method) error {
	r.calls[m].Add(1)
	select {
	case <-r.done:
		return errClosed
	default:
	}
	if d := time.Duration(r.faults.latency[m].Load()); d > 0 {
		if err := r.sleep(ctx, d); err != nil {
			return err
		}
	}
	if r.faults.active.Load() == 0 {
		return nil
	}
	return r.faults.take(m)
}

func (f *faults) take(m method) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	inj := f.errs[m]
	if inj == nil {
		return nil
	}
	if inj.times > 0 {
		inj.times--
		if inj.times == 0 {
			f.errs[m] = nil
			f.active.Add(-1)
		}
	}
	return inj.err
}

// InjectError makes the next times calls of method (a CRI method name such
// as "ListContainers") return err as-is; times 0 means until cleared. Pass
// status errors (status.Error(codes.Unavailable, ...)) to control the gRPC
// code a client sees. To mimic containerd 1.6, which has no container
// events, inject codes.Unimplemented for "GetContainerEvents". Panics on an
// unknown method name.
func (r *Runtime) InjectError(method string, err error, times int) {
	m := lookupMethod(method)
	f := &r.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs[m] == nil {
		f.active.Add(1)
	}
	f.errs[m] = &injected{err: err, times: times}
}

// SetLatency delays every call of method by d on the injected clock before
// it does anything; a call whose context ends first returns its error.
// d <= 0 removes the delay. Panics on an unknown method name.
func (r *Runtime) SetLatency(method string, d time.Duration) {
	r.faults.latency[lookupMethod(method)].Store(int64(d))
}

// ClearInjections removes all injected errors and latencies.
func (r *Runtime) ClearInjections() {
	f := &r.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.errs {
		f.errs[i] = nil
		f.latency[i].Store(0)
	}
	f.active.Store(0)
}

// Calls returns how often method has been called, whatever the outcome.
// Unknown names count 0.
func (r *Runtime) Calls(method string) int {
	for i, n := range methodNames {
		if n == method {
			return int(r.calls[i].Load())
		}
	}
	return 0
}
