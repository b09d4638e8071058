package podstatus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/nodekit-dev/nodekit/podstatus"
)

var errDown = errors.New("connection refused")

// fakeAPI is an API server's pods: it applies status patches as the API
// server does, refuses a patch or a delete for another UID (Conflict),
// and fails calls as told. It records each call ("get ns/name", "patch
// ns/name", "delete ns/name").
type fakeAPI struct {
	mu       sync.Mutex
	pods     map[string]*v1.Pod // by namespace/name
	calls    []string
	patches  []string
	failNext int            // the next calls that fail
	failVerb map[string]int // the next calls of a verb that fail
	down     bool           // every call fails
	cheap    bool           // benchmarks: pods are not copied, patches not applied, calls not recorded
	called   chan string
	version  int // the last resourceVersion given
}

var _ podstatus.PodAPI = (*fakeAPI)(nil)

func newFakeAPI(pods ...*v1.Pod) *fakeAPI {
	f := &fakeAPI{pods: map[string]*v1.Pod{}}
	for _, p := range pods {
		f.put(p)
	}
	return f
}

func (f *fakeAPI) put(p *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p = p.DeepCopy()
	f.pods[p.Namespace+"/"+p.Name] = p
	f.newVersion(p)
}

// newVersion gives p the next resourceVersion, as etcd does; f.mu is held.
func (f *fakeAPI) newVersion(p *v1.Pod) {
	f.version++
	p.ResourceVersion = strconv.Itoa(f.version)
}

func (f *fakeAPI) get(ns, name string) *v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods[ns+"/"+name].DeepCopy()
}

func (f *fakeAPI) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeAPI) failNextCalls(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext = n
}

// takeCalls returns the calls made since the last takeCalls.
func (f *fakeAPI) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// callsSoFar returns the calls made since the last takeCalls, keeping them.
func (f *fakeAPI) callsSoFar() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// call records a call and says whether it fails; f.mu is held.
func (f *fakeAPI) call(verb, ns, name string) (*v1.Pod, error) {
	c := verb + " " + ns + "/" + name
	if !f.cheap {
		f.calls = append(f.calls, c)
	}
	if f.called != nil {
		f.called <- c
	}
	if f.down {
		return nil, errDown
	}
	if f.failNext > 0 {
		f.failNext--
		return nil, errDown
	}
	if f.failVerb[verb] > 0 {
		f.failVerb[verb]--
		return nil, apierrors.NewInternalError(errors.New(verb + " failed"))
	}
	p := f.pods[ns+"/"+name]
	if p == nil {
		return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	return p, nil
}

func (f *fakeAPI) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.call("get", namespace, name)
	if err != nil || f.cheap {
		return p, err
	}
	return p.DeepCopy(), nil
}

func (f *fakeAPI) PatchPodStatus(_ context.Context, namespace, name string, uid types.UID, patch []byte) (*v1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.call("patch", namespace, name)
	if err != nil {
		return nil, err
	}
	if f.cheap {
		return p, nil
	}
	var meta struct {
		Metadata struct{ UID types.UID } `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &meta); err != nil || meta.Metadata.UID != uid || uid != p.UID {
		return nil, apierrors.NewConflict(v1.Resource("pods"), name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", meta.Metadata.UID, p.UID))
	}
	b, _ := json.Marshal(p)
	out, err := strategicpatch.StrategicMergePatch(b, patch, v1.Pod{})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	updated := &v1.Pod{}
	if err := json.Unmarshal(out, updated); err != nil {
		return nil, err
	}
	f.patches = append(f.patches, string(patch))
	f.newVersion(updated)
	f.pods[namespace+"/"+name] = updated
	return updated.DeepCopy(), nil
}

func (f *fakeAPI) DeletePod(_ context.Context, namespace, name string, uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.call("delete", namespace, name)
	if err != nil {
		return err
	}
	if p.UID != uid {
		return apierrors.NewConflict(v1.Resource("pods"), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, p.UID))
	}
	delete(f.pods, namespace+"/"+name)
	return nil
}
