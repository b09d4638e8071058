package oomwatch_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/nodekit-dev/nodekit/oomwatch"
)

// printRecorder prints events; an *events.Recorder in an agent.
type printRecorder struct{}

func (printRecorder) Eventf(_ apiruntime.Object, eventtype, reason, messageFmt string, args ...any) {
	fmt.Println(eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// A system OOM and a container's OOM from the kernel log: the kubelet's
// event for the first, a count for each. On a node, leave Source unset
// (/dev/kmsg, as root).
func Example() {
	kernelLog := []string{
		"4,2210,2154876001,-;java invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=1000",
		"6,2238,2154876140,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=java,pid=6012,uid=1000",
		"3,2239,2154876162,-;Out of memory: Killed process 6012 (java) total-vm:4843372kB, anon-rss:4013568kB, file-rss:512kB, shmem-rss:0kB, UID:1000 pgtables:8268kB oom_score_adj:1000",
		"4,2301,2160000001,-;stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=994",
		"6,2302,2160000140,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=c1,mems_allowed=0,oom_memcg=/kubepods/burstable/pod1/c1,task_memcg=/kubepods/burstable/pod1/c1,task=stress,pid=5321,uid=0",
	}
	w, err := oomwatch.New(oomwatch.Config{
		Source: oomwatch.SourceFunc(func(_ context.Context, line func(string)) error {
			for _, l := range kernelLog {
				line(l)
			}
			return nil // the log ends: Run returns
		}),
		Recorder: printRecorder{},
		NodeRef:  &v1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-1"},
	})
	if err != nil {
		panic(err)
	}
	if err := w.Run(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println(w.OOMEvents("/kubepods/burstable/pod1/c1"), w.OOMEvents("/"))
	// Output:
	// Warning SystemOOM System OOM encountered, victim process: java, pid: 6012
	// 1 1
}

// The parser alone: kmsg lines in, OOMs out, dated from the boot time.
func ExampleParser() {
	p := oomwatch.NewParser(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	for _, line := range []string{
		"4,10,61000000,-;stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
		"6,11,61500000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=c1,mems_allowed=0,oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/c1,task=stress,pid=42,uid=0",
	} {
		if oom, ok := p.Feed(line); ok {
			fmt.Println(oom.Pid, oom.ProcessName, oom.ContainerName, oom.VictimContainerName, oom.System(), oom.TimeOfDeath.Format(time.TimeOnly))
		}
	}
	// Output:
	// 42 stress /kubepods/pod1/c1 /kubepods/pod1 false 03:01:01
}
