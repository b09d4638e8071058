//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// The kinds of pod the churn creates, by the label "kind".
const (
	kindRun      = "run"       // runs until deleted
	kindHook     = "hook"      // a preStop hook of 20s, grace 30s: deletions take long, unless shortened
	kindJobOK    = "job-ok"    // restartPolicy Never, exits 0: Succeeded
	kindJobFail  = "job-fail"  // restartPolicy Never, exits 3: Failed
	kindLiveFail = "live-fail" // its liveness probe fails: restarted, again and again
	kindUnready  = "unready"   // its readiness probe fails: Running, never ready
	kindVolumes  = "volumes"   // configMap and emptyDir volumes, burstable
)

var kinds = []string{kindRun, kindHook, kindJobOK, kindJobFail, kindLiveFail, kindUnready, kindVolumes}

// soakPod is a pod of kind for node: host network (pods here get loopback
// only), the test image, no service account token (no controller-manager).
func soakPod(run, node, kind, name string) *v1.Pod {
	c := v1.Container{Name: "c", Image: testenv.TestImage, ImagePullPolicy: v1.PullNever, Args: []string{"sleep"}}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"soak": run, "kind": kind}},
		Spec: v1.PodSpec{NodeName: node, HostNetwork: true, AutomountServiceAccountToken: ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](5)}}
	exitOne := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/testbin", "exit", "1"}}},
		PeriodSeconds: 2, FailureThreshold: 1}
	switch kind {
	case kindHook:
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/testbin", "sleep", "20"}}}}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	case kindJobOK, kindJobFail:
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		c.Args = []string{"sleep", "2"}
		if kind == kindJobFail {
			c.Args = []string{"exit", "3"}
		}
	case kindLiveFail:
		c.LivenessProbe = exitOne
	case kindUnready:
		c.ReadinessProbe = exitOne
	case kindVolumes:
		c.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "scratch", MountPath: "/scratch"}}
		c.Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}
		p.Spec.Volumes = []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "soak-" + run}}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	}
	p.Spec.Containers = []v1.Container{c}
	return p
}

// churn creates, updates and deletes API pods until ctx ends; API errors
// (during the apiserver's outage) are counted, not fatal.
type churn struct {
	client kubernetes.Interface
	run    string
	node   string
	target int // live pods to keep
	rand   *rand.Rand

	mu     sync.Mutex
	counts map[string]int
}

func (c *churn) count(what string) {
	c.mu.Lock()
	c.counts[what]++
	c.mu.Unlock()
}

func (c *churn) loop(ctx context.Context) {
	for n := 0; ctx.Err() == nil; n++ {
		c.step(ctx, n)
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(300+c.rand.IntN(400)) * time.Millisecond):
		}
	}
}

// step does one action: create a pod while fewer than target live,
// otherwise delete (gracefully, forcefully, or shortened), update, or
// clear a finished pod.
func (c *churn) step(ctx context.Context, n int) {
	pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "soak=" + c.run})
	if err != nil {
		c.count("API calls that failed")
		return
	}
	var live, finished []v1.Pod
	for _, p := range pods.Items {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed:
			finished = append(finished, p)
		default:
			live = append(live, p)
		}
	}
	if len(live) < c.target || c.rand.IntN(4) == 0 {
		c.create(ctx, n)
		return
	}
	switch r := c.rand.IntN(10); {
	case r < 2 && len(finished) > 0:
		c.delete(ctx, finished[c.rand.IntN(len(finished))], nil, "finished pods deleted")
	case r < 5:
		c.delete(ctx, live[c.rand.IntN(len(live))], nil, "pods deleted")
	case r < 6:
		c.delete(ctx, live[c.rand.IntN(len(live))], ptr.To[int64](0), "pods force-deleted")
	case r < 7:
		c.shorten(ctx, live[c.rand.IntN(len(live))])
	default:
		c.update(ctx, live[c.rand.IntN(len(live))], n)
	}
}

func (c *churn) create(ctx context.Context, n int) {
	kind := kinds[c.rand.IntN(len(kinds))]
	p := soakPod(c.run, c.node, kind, fmt.Sprintf("%s-%d", kind, n))
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		c.count("API calls that failed")
		return
	}
	c.count("pods created")
}

func (c *churn) delete(ctx context.Context, p v1.Pod, grace *int64, what string) {
	err := c.client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: grace,
		Preconditions: &metav1.Preconditions{UID: ptr.To(p.UID)}})
	if err != nil {
		c.count("API calls that failed")
		return
	}
	c.count(what)
}

// shorten deletes p with its grace period, then, a moment later, again
// with 1 s: the termination under way must be cut short.
func (c *churn) shorten(ctx context.Context, p v1.Pod) {
	c.delete(ctx, p, nil, "pods deleted, then shortened")
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(500+c.rand.IntN(2000)) * time.Millisecond):
	}
	c.delete(ctx, p, ptr.To[int64](1), "grace periods shortened")
}

func (c *churn) update(ctx context.Context, p v1.Pod, n int) {
	patch := fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, n)
	if _, err := c.client.CoreV1().Pods("default").Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{}); err != nil {
		c.count("API calls that failed")
		return
	}
	c.count("pods updated")
}

func (c *churn) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}
