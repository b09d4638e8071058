package podstatus_test

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/podstatus"
)

// A pod's statuses written to the API server, only when they change, and
// the pod deleted once it has succeeded after its deletion was asked.
func ExampleAPIWriter() {
	clk := clocktesting.NewFakeClock(t0)
	statuses := podstatus.NewManager(clk)
	api := &printingAPI{pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "u1"}}}
	writer, _ := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Clock: clk})
	ctx := context.Background() // a node agent runs go writer.Run(ctx) instead of calling Sync

	pod := api.pod.DeepCopy()
	statuses.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning})
	writer.Sync(ctx)
	writer.Sync(ctx) // nothing changed: nothing sent

	deleted := metav1.NewTime(t0)
	api.pod.DeletionTimestamp, pod.DeletionTimestamp = &deleted, &deleted // as the pod source sees it
	statuses.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodSucceeded})
	writer.Sync(ctx)
	// Output:
	// patch default/job {"metadata":{"uid":"u1"},"status":{"phase":"Running","startTime":"2023-11-14T22:13:20Z"}}
	// patch default/job {"metadata":{"uid":"u1"},"status":{"phase":"Succeeded"}}
	// delete default/job u1
}

// printingAPI stands for the API server (apiclient.New(clientset) in a
// node agent): it prints what it is asked and applies the patches.
type printingAPI struct{ pod *v1.Pod }

func (a *printingAPI) GetPod(context.Context, string, string) (*v1.Pod, error) {
	return a.pod.DeepCopy(), nil
}

func (a *printingAPI) PatchPodStatus(_ context.Context, ns, name string, _ types.UID, patch []byte) (*v1.Pod, error) {
	fmt.Println("patch", ns+"/"+name, string(patch))
	old, _ := json.Marshal(a.pod)
	b, err := strategicpatch.StrategicMergePatch(old, patch, v1.Pod{})
	if err != nil {
		return nil, err
	}
	a.pod = &v1.Pod{}
	err = json.Unmarshal(b, a.pod)
	return a.pod.DeepCopy(), err
}

func (a *printingAPI) DeletePod(_ context.Context, ns, name string, uid types.UID) error {
	fmt.Println("delete", ns+"/"+name, uid)
	return nil
}
