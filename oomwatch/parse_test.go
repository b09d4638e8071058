package oomwatch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/oomwatch"
)

var boot = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at is the time of a kmsg record stamped usec after boot.
func at(usec int64) time.Time { return boot.Add(time.Duration(usec) * time.Microsecond) }

// The cgroups of testdata's reports (cgroup v1, cgroupfs driver).
const (
	memcgPod       = "/kubepods/burstable/podec6ef230-f182-8039-ee79-4566b9c58adc"
	memcgContainer = memcgPod + "/f3860c6deea91826f5fec5f70de59cfedd493c5d242caa5880b8286432655552"
	systemPod      = "/kubepods/besteffort/pod1d665b9b-1467-944c-128a-5575119d1cfd"
	systemVictim   = systemPod + "/13c150d5733b148191b46faede8f9438eae430c9ab9e077c6cd373e161201b35"
	legacyPod      = "/kubepods/burstable/pod7bc3ca68-7694-37ce-9864-55407dab2a1f"
	legacyVictim   = legacyPod + "/2b317c601be2522ed3273943a6277e3236ed676b4858817bff8a2184ba239379"
)

func feed(lines ...string) []oomwatch.OOM {
	p := oomwatch.NewParser(boot)
	var got []oomwatch.OOM
	for _, l := range lines {
		if oom, ok := p.Feed(l); ok {
			got = append(got, oom)
		}
	}
	return got
}

func readLines(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// The kernel's reports in /dev/kmsg's format: Linux 6.18 (the dev host's)
// memcg and system OOMs on cgroup v1, and a 4.14 memcg OOM of the format
// before the one-line summary. They are written from the kernels' format
// strings (mm/oom_kill.c, mm/memcontrol.c, kernel/cgroup/cpuset.c), with
// this host's config (cpusets and memcg on, no printk caller field): the
// tests trigger no OOM kill to capture them.
func TestParserKernelReports(t *testing.T) {
	for _, tc := range []struct {
		file string
		want oomwatch.OOM
	}{
		{"memcg-oom-6.18.kmsg", oomwatch.OOM{Pid: 5321, ProcessName: "stress", TimeOfDeath: at(1083412590),
			ContainerName: memcgContainer, VictimContainerName: memcgContainer, Constraint: "CONSTRAINT_MEMCG"}},
		{"system-oom-6.18.kmsg", oomwatch.OOM{Pid: 6012, ProcessName: "java", TimeOfDeath: at(2154876140),
			ContainerName: systemVictim, VictimContainerName: "/", Constraint: "CONSTRAINT_NONE"}},
		// The pod's limit was hit; the container's process was killed.
		{"legacy-oom-4.14.kmsg", oomwatch.OOM{Pid: 3210, ProcessName: "stress", TimeOfDeath: at(512345801),
			ContainerName: legacyVictim, VictimContainerName: legacyPod}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			assert.Equal(t, []oomwatch.OOM{tc.want}, feed(readLines(t, tc.file)...))
		})
	}
}

const (
	start   = "4,10,1000,-;stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"
	summary = "6,11,2000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=c1,mems_allowed=0,"
	killed  = "3,12,3000,-;Memory cgroup out of memory: Killed process 42 (stress) total-vm:4kB, anon-rss:0kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0"
	// cAdvisor's test line, without a kmsg header.
	cadvisorLine = "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=ef807430361e6e82b45db92e2e9b6fbec98f419b12c591e655c1a725565e73a8,mems_allowed=0,oom_memcg=/kubepods/burstable/podfbdfe8e3-1c87-4ff2-907c-b2ec8e25d012,task_memcg=/kubepods/burstable/podfbdfe8e3-1c87-4ff2-907c-b2ec8e25d012/ef807430361e6e82b45db92e2e9b6fbec98f419b12c591e655c1a725565e73a8,task=manager,pid=966,uid=0"
)

func memcgOOM(pid int, name string) oomwatch.OOM {
	return oomwatch.OOM{Pid: pid, ProcessName: name, TimeOfDeath: at(2000), ContainerName: "/a/b", VictimContainerName: "/a",
		Constraint: "CONSTRAINT_MEMCG"}
}

func TestParserLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []oomwatch.OOM
	}{
		{"cAdvisor's line, bare", []string{"ruby invoked oom-killer: gfp_mask=0x201da, order=0, oom_score_adj=0", cadvisorLine},
			[]oomwatch.OOM{{Pid: 966, ProcessName: "manager",
				ContainerName:       "/kubepods/burstable/podfbdfe8e3-1c87-4ff2-907c-b2ec8e25d012/ef807430361e6e82b45db92e2e9b6fbec98f419b12c591e655c1a725565e73a8",
				VictimContainerName: "/kubepods/burstable/podfbdfe8e3-1c87-4ff2-907c-b2ec8e25d012", Constraint: "CONSTRAINT_MEMCG"}}},
		{"memcg", []string{start, summary + "oom_memcg=/a,task_memcg=/a/b,task=stress,pid=42,uid=0"},
			[]oomwatch.OOM{memcgOOM(42, "stress")}},
		{"system OOM of a process in the root cgroup", []string{start,
			"6,11,2000,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=stress,pid=42,uid=0"},
			[]oomwatch.OOM{{Pid: 42, ProcessName: "stress", TimeOfDeath: at(2000), ContainerName: "/", VictimContainerName: "/", Constraint: "CONSTRAINT_NONE"}}},
		{"kernel without memcg", []string{start, "6,11,2000,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,task=x,pid=42,uid=0"},
			[]oomwatch.OOM{{Pid: 42, ProcessName: "x", TimeOfDeath: at(2000), ContainerName: "/", VictimContainerName: "/", Constraint: "CONSTRAINT_NONE"}}},
		{"kernel without cpusets", []string{start, "6,11,2000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),oom_memcg=/a,task_memcg=/a/b,task=stress,pid=42,uid=0"},
			[]oomwatch.OOM{memcgOOM(42, "stress")}},
		{"node lists with commas", []string{start, "6,11,2000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=0-1,3,cpuset=/,mems_allowed=0-1,3,oom_memcg=/a,task_memcg=/a/b,task=stress,pid=42,uid=0"},
			[]oomwatch.OOM{memcgOOM(42, "stress")}},
		{"task name holding pid and uid", []string{start, summary + "oom_memcg=/a,task_memcg=/a/b,task=a,pid=1,uid=2,pid=42,uid=0"},
			[]oomwatch.OOM{memcgOOM(42, "a,pid=1,uid=2")}},
		{"task name holding task_memcg", []string{start, summary + "oom_memcg=/a,task_memcg=/a/b,task=,task_memcg=/x,pid=42,uid=0"},
			[]oomwatch.OOM{memcgOOM(42, ",task_memcg=/x")}},
		{"escaped task name", []string{start, summary + `oom_memcg=/a,task_memcg=/a/b,task=my\x5cjob\x0a,pid=42,uid=-1`},
			[]oomwatch.OOM{memcgOOM(42, "my\\job\n")}},
		{"caller field and trailing blank", []string{start, strings.Replace(summary, "-;", "-,caller=T42;", 1) + "oom_memcg=/a,task_memcg=/a/b,task=stress,pid=42,uid=0 \n"},
			[]oomwatch.OOM{memcgOOM(42, "stress")}},
		{"the victim's Killed line after the summary", []string{start, summary + "oom_memcg=/a,task_memcg=/a/b,task=stress,pid=42,uid=0", killed},
			[]oomwatch.OOM{memcgOOM(42, "stress")}},
		{"a malformed summary leaves the Killed line", []string{start, summary + "oom_memcg=/a,task_memcg=/a/b,task=stress,pid=x,uid=0", killed},
			[]oomwatch.OOM{{Pid: 42, ProcessName: "stress", TimeOfDeath: at(3000), ContainerName: "/", VictimContainerName: "/"}}},
		{"a report without a victim is dropped", []string{start, "4,11,1500,-;Out of memory and no killable processes...",
			"4,12,1800,-;stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
			summary + "oom_memcg=/a,task_memcg=/a/b,task=stress,pid=42,uid=0"},
			[]oomwatch.OOM{memcgOOM(42, "stress")}},
		{"lines outside a report", []string{summary + "oom_memcg=/a,task_memcg=/a/b,task=stress,pid=42,uid=0", killed,
			"6,13,4000,-;Task in /a killed as a result of limit of /a"}, nil},
		{"two reports", []string{start, summary + "oom_memcg=/a,task_memcg=/a/b,task=one,pid=1,uid=0", killed,
			start, summary + "oom_memcg=/a,task_memcg=/a/b,task=two,pid=2,uid=0"},
			[]oomwatch.OOM{memcgOOM(1, "one"), memcgOOM(2, "two")}},
		{"continuation lines and headers that are not", []string{start, " SUBSYSTEM=memory", "x,y,2000,-;no header", "",
			summary + "oom_memcg=/a,task_memcg=/a/b,task=stress,pid=42,uid=0"},
			[]oomwatch.OOM{memcgOOM(42, "stress")}},
		{"legacy system OOM", []string{start, "3,11,2500,-;Out of memory: Kill process 42 (dd) score 900 or sacrifice child",
			"3,12,3000,-;Killed process 42 (dd) total-vm:4kB, anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"},
			[]oomwatch.OOM{{Pid: 42, ProcessName: "dd", TimeOfDeath: at(3000), ContainerName: "/", VictimContainerName: "/"}}},
		{"legacy limit of /", []string{start, "6,11,2500,-;Task in /a killed as a result of limit of /", killed},
			[]oomwatch.OOM{{Pid: 42, ProcessName: "stress", TimeOfDeath: at(3000), ContainerName: "/a", VictimContainerName: "/"}}},
		{"name with parentheses", []string{start, "3,12,3000,-;Killed process 42 (a) (b) total-vm:4kB, anon-rss:0kB"},
			[]oomwatch.OOM{{Pid: 42, ProcessName: "a) (b", TimeOfDeath: at(3000), ContainerName: "/", VictimContainerName: "/"}}},
		{"nothing after the name", []string{start, "3,12,3000,-;Killed process 42 (x)"},
			[]oomwatch.OOM{{Pid: 42, ProcessName: "x", TimeOfDeath: at(3000), ContainerName: "/", VictimContainerName: "/"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, feed(tc.lines...))
		})
	}
}

func TestOOMSystem(t *testing.T) {
	assert.True(t, oomwatch.OOM{VictimContainerName: "/"}.System())
	assert.False(t, oomwatch.OOM{VictimContainerName: "/kubepods"}.System())
}

// FuzzParse: no line, however broken, panics the Parser, and an OOM it
// returns names a pid.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"memcg-oom-6.18.kmsg", "system-oom-6.18.kmsg", "legacy-oom-4.14.kmsg"} {
		f.Add(strings.Join(readLines(f, name), "\n"))
	}
	f.Add(start + "\n" + cadvisorLine)
	f.Add(start + "\n" + summary + `oom_memcg=/a,task_memcg=/a/b,task=\x5,pid=-1,uid=-`)
	f.Add(start + "\n99999999999,1,99999999999999999999,-;Killed process 1 (")
	f.Fuzz(func(t *testing.T, log string) {
		p := oomwatch.NewParser(boot)
		for _, line := range strings.Split(log, "\n") {
			if oom, ok := p.Feed(line); ok && oom.Pid < 0 {
				t.Fatalf("negative pid %d from %q", oom.Pid, line)
			}
		}
	})
}
