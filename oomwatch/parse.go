package oomwatch

import (
	"math"
	"path"
	"strconv"
	"strings"
	"time"
)

// RootCgroup is the cgroup an OOM is attributed to when the kernel names
// none: a system-wide OOM's VictimContainerName.
const RootCgroup = "/"

// OOM is one OOM kill as the kernel reported it: cAdvisor's OomInstance,
// with cAdvisor's field names and meanings, which the kubelet consumes.
type OOM struct {
	// Pid and ProcessName are the killed process's.
	Pid         int
	ProcessName string
	// TimeOfDeath is the kernel's timestamp of the line that ended the
	// report, after the Parser's boot time; zero for a line without a
	// kmsg header.
	TimeOfDeath time.Time
	// ContainerName is the memory cgroup of the killed process, as the
	// kernel prints it (task_memcg, or the legacy "Task in X"): the key
	// of the OOM kill counter. RootCgroup when the report names none.
	ContainerName string
	// VictimContainerName is the memory cgroup whose limit was hit
	// (oom_memcg, or the legacy "limit of Y"); RootCgroup for a
	// system-wide OOM. cAdvisor's "victim" is the cgroup under OOM, not
	// the killed process's.
	VictimContainerName string
	// Constraint is the kernel's CONSTRAINT_NONE, CONSTRAINT_CPUSET,
	// CONSTRAINT_MEMORY_POLICY or CONSTRAINT_MEMCG; "" in the legacy
	// format, which does not print it.
	Constraint string
}

// System reports whether the OOM was system-wide: the kubelet's test for
// its SystemOOM event.
func (o OOM) System() bool { return o.VictimContainerName == RootCgroup }

// Markers of the kernel's OOM report (mm/oom_kill.c, mm/memcontrol.c).
const (
	// dump_header's first line, on every kernel: a report starts.
	startMarker = "invoked oom-killer:"
	// dump_oom_victim's one-line summary (Linux 4.19 and later).
	summaryMarker = "oom-kill:constraint="
	// __oom_kill_process, after the summary; before 4.19 it ends the report.
	killedMarker = "Killed process "
	// mem_cgroup_print_oom_info before 4.19, in a memcg OOM's report.
	legacyTaskMarker  = "Task in "
	legacyLimitMarker = " killed as a result of limit of "
)

// Parser turns kernel log lines into OOMs, as cAdvisor's oomparser does:
// a report starts with "invoked oom-killer:" and ends with the one-line
// oom-kill summary or, before Linux 4.19, with "Killed process". It is
// pure (no I/O, no clock) and not safe for concurrent use.
type Parser struct {
	bootTime time.Time
	inReport bool
	cur      OOM
}

// NewParser returns a Parser that dates kmsg records from bootTime, when
// the kernel started its log clock.
func NewParser(bootTime time.Time) *Parser { return &Parser{bootTime: bootTime} }

// Feed takes one line of /dev/kmsg ("prio,seq,usec,flags;message"; a
// continuation line, " KEY=VALUE", is skipped; a line without a header is
// taken as a bare message) and returns the OOM it completes, if any.
func (p *Parser) Feed(line string) (OOM, bool) {
	at, msg, ok := p.record(line)
	if !ok {
		return OOM{}, false
	}
	if strings.Contains(msg, startMarker) {
		// A new report: one left unfinished (no victim found) is dropped
		// rather than completed with this report's lines, as cAdvisor would.
		p.inReport = true
		p.cur = OOM{ContainerName: RootCgroup, VictimContainerName: RootCgroup}
		return OOM{}, false
	}
	if !p.inReport {
		return OOM{}, false
	}
	if !parseSummary(msg, &p.cur) && !parseKilled(msg, &p.cur) {
		parseLegacyTask(msg, &p.cur)
		return OOM{}, false
	}
	p.inReport = false
	p.cur.TimeOfDeath = at
	return p.cur, true
}

// maxUsec keeps a record's timestamp within a time.Duration.
const maxUsec = math.MaxInt64 / int64(time.Microsecond)

// record splits a kmsg line into its time and its message, unescaped.
func (p *Parser) record(line string) (time.Time, string, bool) {
	line = strings.TrimRight(line, "\r\n")
	if line == "" || line[0] == ' ' {
		return time.Time{}, "", false
	}
	header, msg, found := strings.Cut(line, ";")
	if !found {
		return time.Time{}, line, true
	}
	// prio,seq,usec,flags and, on newer kernels, more fields (caller=...):
	// the dev-kmsg ABI says to ignore those.
	fields := strings.Split(header, ",")
	if len(fields) < 3 || !isUint(fields[0]) || !isUint(fields[1]) {
		return time.Time{}, line, true
	}
	usec, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil || usec < 0 || usec > maxUsec {
		return time.Time{}, line, true
	}
	return p.bootTime.Add(time.Duration(usec) * time.Microsecond), unescape(msg), true
}

// parseSummary reads the one-line summary:
//
//	oom-kill:constraint=C,nodemask=N[,cpuset=S,mems_allowed=M]
//	  [,oom_memcg=PATH|,global_oom][,task_memcg=PATH],task=COMM,pid=P,uid=U
//
// (cpuset fields only with CONFIG_CPUSETS, memcg fields only with
// CONFIG_MEMCG). cAdvisor's regular expression needs every field, so it
// misses a system OOM's global_oom line; and nodemask, mems_allowed and
// the task name may hold commas. Here pid and uid are taken from the
// right, as the last fields, so a task name holding ",pid=" cannot move
// them; the task name starts at the first ",task=" after task_memcg,
// since the cgroup paths are the node's while a process names itself.
func parseSummary(msg string, o *OOM) bool {
	i := strings.Index(msg, summaryMarker)
	if i < 0 {
		return false
	}
	s := strings.TrimRight(msg[i+len("oom-kill:"):], " ")
	s, uid, ok := cutLast(s, ",uid=")
	if !ok || !isInt(uid) {
		return false
	}
	s, pidText, ok := cutLast(s, ",pid=")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid < 0 {
		return false
	}
	from := 0
	if j := strings.Index(s, ",task_memcg="); j >= 0 {
		from = j + len(",task_memcg=")
	}
	j := strings.Index(s[from:], ",task=")
	if j < 0 {
		return false
	}
	head, task := s[:from+j], s[from+j+len(",task="):]

	constraint, _, _ := strings.Cut(strings.TrimPrefix(head, "constraint="), ",")
	container, victim := RootCgroup, RootCgroup
	if j := strings.Index(head, ",task_memcg="); j >= 0 {
		head, container = head[:j], head[j+len(",task_memcg="):]
	}
	// No oom_memcg (global_oom, or no memcg at all): system-wide.
	if j := strings.Index(head, ",oom_memcg="); j >= 0 {
		victim = head[j+len(",oom_memcg="):]
	}
	*o = OOM{Pid: pid, ProcessName: task, ContainerName: container, VictimContainerName: victim, Constraint: constraint}
	return true
}

// parseKilled reads "Killed process PID (COMM) total-vm:...". The name
// ends at the last ") total-vm:" (or, on kernels that print nothing after
// it, the last ")"), so a name holding parentheses is read whole.
func parseKilled(msg string, o *OOM) bool {
	i := strings.Index(msg, killedMarker)
	if i < 0 {
		return false
	}
	pidText, rest, ok := strings.Cut(msg[i+len(killedMarker):], " (")
	if !ok || !isUint(pidText) {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		return false
	}
	end := strings.LastIndex(rest, ") total-vm:")
	if end < 0 {
		end = strings.LastIndex(rest, ")")
	}
	if end < 0 {
		return false
	}
	o.Pid, o.ProcessName = pid, rest[:end]
	return true
}

// parseLegacyTask reads "Task in X killed as a result of limit of Y",
// made absolute and clean as cAdvisor does.
func parseLegacyTask(msg string, o *OOM) {
	i := strings.Index(msg, legacyTaskMarker)
	if i < 0 {
		return
	}
	task, limit, ok := strings.Cut(msg[i+len(legacyTaskMarker):], legacyLimitMarker)
	if !ok {
		return
	}
	o.ContainerName = path.Join(RootCgroup, task)
	o.VictimContainerName = path.Join(RootCgroup, strings.TrimRight(limit, " "))
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func isUint(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isInt accepts a uid printed with %d: (uid_t)-1 prints as -1.
func isInt(s string) bool { return isUint(strings.TrimPrefix(s, "-")) }

// unescape decodes the \xHH escapes /dev/kmsg writes for non-printable
// bytes and for the backslash itself, so a task name reads as its
// process set it.
func unescape(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 3
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}
