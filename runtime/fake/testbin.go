package fake

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testbin mirrors hack/tools/testbin, the binary in TestbinImage and
// RemovableImage (entrypoint /testbin, cmd serve, env PORT=8080). Its doc
// comment is the contract; keep the two in sync.
const testbinPath = "/testbin"

// ptsName is what testbin's tty mode prints on a terminal: the first pty
// of the container's own devpts.
const ptsName = "/dev/pts/0"

// TestbinBehavior runs containers of the project's test image the way the
// real binary does. The mode is the first argument after /testbin
// ("serve" without arguments):
//
//	serve         prints "listening on ADDR", runs until stopped, then
//	              prints "got terminated, exiting" and exits 0; with
//	              WithHostPorts it really serves the HTTP routes
//	grpc          like serve, with a gRPC health server
//	sleep [S]     exits 0 after S seconds on the clock (never without S)
//	exit [N]      prints "exiting with N", exits N
//	write PATH TEXT [N]
//	              writes TEXT to PATH and exits N (default 0), printing
//	              nothing: PATH is written on the host when a mount's
//	              container path is PATH (a termination-message file);
//	              a path of the container's own filesystem is not kept
//	alloc MB      prints "allocated MB MiB" and runs until stopped, or is
//	              OOM-killed when the memory limit is below MB MiB
//	echo ARGS...  prints ARGS, exits 0
//	stderr MSG... prints MSG to stderr, exits 0
//	hostname      prints the hostname, exits 0
//	cat           copies stdin to stdout until EOF, exits 0: with the
//	              container's Stdin, prints each line an attached client
//	              sends and exits 0 when stdin closes (StdinOnce);
//	              without, exits 0 at once, like cat on /dev/null
//	tty           prints "/dev/pts/0" and exits 0 on a terminal (the
//	              container's Tty, exec -t); else prints "not a tty" and
//	              exits 1, like coreutils tty
//	anything else prints `testbin: unknown mode "X"` to stderr, exits 2
//
// Every mode except serve/grpc prints nothing on SIGTERM and exits 0.
// ExecSync and streaming Exec run the same modes for commands starting
// with /testbin (ExecSync without stdin or terminal); any other command
// fails like runc with "executable file not found".
func TestbinBehavior(cfg *runtimeapi.ContainerConfig) Program {
	env := envOf(cfg)
	exec := testbinExec(env, memoryLimit(cfg))
	argv := testbinArgv(cfg)
	if argv[0] != testbinPath {
		return Program{StartError: startNotFound(argv[0]), Exec: exec}
	}
	p := testbinProgram(argv[1:], env, memoryLimit(cfg), cfg)
	p.Exec = exec
	return p
}

// testbinArgv applies the image's entrypoint and cmd the way containerd
// does: Command replaces both, Args replaces only cmd.
func testbinArgv(cfg *runtimeapi.ContainerConfig) []string {
	if len(cfg.GetCommand()) > 0 {
		return append(append([]string(nil), cfg.GetCommand()...), cfg.GetArgs()...)
	}
	if len(cfg.GetArgs()) > 0 {
		return append([]string{testbinPath}, cfg.GetArgs()...)
	}
	return []string{testbinPath, "serve"}
}

// envOf returns the container's environment; later entries win, as in
// the OCI spec containerd builds. PORT comes from the image.
func envOf(cfg *runtimeapi.ContainerConfig) map[string]string {
	env := map[string]string{"PORT": "8080"}
	for _, kv := range cfg.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	return env
}

func memoryLimit(cfg *runtimeapi.ContainerConfig) int64 {
	return cfg.GetLinux().GetResources().GetMemoryLimitInBytes()
}

// listenAddr is testbin's: $ADDR, else 127.0.0.1:$PORT.
func listenAddr(env map[string]string) string {
	if a := env["ADDR"]; a != "" {
		return a
	}
	port := env["PORT"]
	if port == "" {
		port = "8080"
	}
	return "127.0.0.1:" + port
}

// exitCode is what the kernel keeps of os.Exit's argument.
func exitCode(n int) int32 { return int32(n & 0xff) }

func testbinUsage(format string, a ...any) Program {
	return Program{Exits: true, ExitCode: 2, Stderr: []string{fmt.Sprintf("testbin: "+format, a...)}}
}

// testbinProgram is the container process for testbin arguments args;
// cfg tells whether it has stdin and a terminal.
func testbinProgram(args []string, env map[string]string, memLimit int64, cfg *runtimeapi.ContainerConfig) Program {
	mode := "serve"
	if len(args) > 0 {
		mode, args = args[0], args[1:]
	}
	switch mode {
	case "serve", "grpc":
		var unhealthyAfter time.Duration
		if v := env["UNHEALTHY_AFTER"]; v != "" && mode == "serve" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return testbinUsage("bad UNHEALTHY_AFTER %q: %v", v, err)
			}
			unhealthyAfter = d
		}
		// "listening on" is printed by Run, which knows whether the
		// listen (with host ports) worked.
		return Program{
			StopStdout: []string{"got terminated, exiting"},
			Run:        serveRun(mode, listenAddr(env), env["HOSTNAME"], unhealthyAfter),
		}
	case "sleep":
		if len(args) == 0 {
			return Program{}
		}
		d, ok := parseSeconds(args[0])
		if !ok {
			return testbinUsage("sleep: bad SECONDS %q", args[0])
		}
		return ExitsAfter(d, 0)
	case "exit":
		code := 0
		if len(args) > 0 {
			n, err := strconv.Atoi(args[0])
			if err != nil {
				return testbinUsage("exit: bad N %q", args[0])
			}
			code = n
		}
		return Program{Exits: true, ExitCode: exitCode(code), Stdout: []string{fmt.Sprintf("exiting with %d", code)}}
	case "write":
		return testbinWrite(args, cfg)
	case "alloc":
		mb, msg := parseAlloc(args)
		if msg != "" {
			return testbinUsage("%s", msg)
		}
		if oomKills(mb, memLimit) {
			// The kernel kills it while touching pages, before it prints.
			return OOMKilledAfter(0)
		}
		return RunsUntilStopped(fmt.Sprintf("allocated %d MiB", mb))
	case "burn":
		return Program{}
	case "spew":
		// Only the summary line: the fake keeps no log volume.
		mb, msg := parseAlloc(args[:min(len(args), 1)])
		if msg != "" {
			return testbinUsage("%s", strings.Replace(msg, "alloc", "spew", 1))
		}
		return RunsUntilStopped(fmt.Sprintf("spewed %d MiB", mb))
	case "echo":
		return Program{Exits: true, Stdout: []string{strings.Join(args, " ")}}
	case "stderr":
		return Program{Exits: true, Stderr: []string{strings.Join(args, " ")}}
	case "hostname":
		return Program{Exits: true, Stdout: []string{env["HOSTNAME"]}}
	case "cat":
		if !cfg.GetStdin() {
			return Program{Exits: true}
		}
		return Program{
			Stdin:       func(p Proc, line string) { p.Print(Stdout, line) },
			StdinClosed: func(p Proc) { p.Exit(0) },
		}
	case "tty":
		if cfg.GetTty() {
			return Program{Exits: true, Stdout: []string{ptsName}}
		}
		return Program{Exits: true, ExitCode: 1, Stdout: []string{"not a tty"}}
	default:
		return testbinUsage("unknown mode %q", mode)
	}
}

// testbinExec runs "/testbin MODE ARGS..." as an exec'd process.
func testbinExec(env map[string]string, memLimit int64) func(cmd []string) ExecResult {
	return func(cmd []string) ExecResult {
		if len(cmd) == 0 || cmd[0] != testbinPath {
			return ExecNotFound(cmd)
		}
		args, mode := cmd[1:], "serve"
		if len(args) > 0 {
			mode, args = args[0], args[1:]
		}
		usage := func(format string, a ...any) ExecResult {
			return ExecResult{ExitCode: 2, Stderr: []byte(fmt.Sprintf("testbin: "+format+"\n", a...))}
		}
		switch mode {
		case "serve", "grpc":
			// Blocks like the real server would; only a timeout ends it.
			return ExecResult{Duration: Forever}
		case "sleep":
			if len(args) == 0 {
				return ExecResult{Duration: Forever}
			}
			d, ok := parseSeconds(args[0])
			if !ok {
				return usage("sleep: bad SECONDS %q", args[0])
			}
			return ExecResult{Duration: d}
		case "exit":
			code := 0
			if len(args) > 0 {
				n, err := strconv.Atoi(args[0])
				if err != nil {
					return usage("exit: bad N %q", args[0])
				}
				code = n
			}
			return ExecResult{Stdout: []byte(fmt.Sprintf("exiting with %d\n", code)), ExitCode: exitCode(code)}
		case "alloc":
			mb, msg := parseAlloc(args)
			if msg != "" {
				return usage("%s", msg)
			}
			if oomKills(mb, memLimit) {
				return ExecResult{ExitCode: 137}
			}
			return ExecResult{Stdout: []byte(fmt.Sprintf("allocated %d MiB\n", mb)), Duration: Forever}
		case "echo":
			return ExecResult{Stdout: []byte(strings.Join(args, " ") + "\n")}
		case "stderr":
			return ExecResult{Stderr: []byte(strings.Join(args, " ") + "\n")}
		case "hostname":
			return ExecResult{Stdout: []byte(env["HOSTNAME"] + "\n")}
		case "cat":
			return ExecResult{Interactive: func(s ExecStreams) int32 {
				if _, err := io.Copy(s.Stdout, s.Stdin); err != nil {
					fmt.Fprintf(s.Stderr, "testbin: cat: %v\n", err)
					return 1
				}
				return 0
			}}
		case "tty":
			return ExecResult{Interactive: func(s ExecStreams) int32 {
				if s.TTY {
					fmt.Fprintln(s.Stdout, ptsName)
					return 0
				}
				fmt.Fprintln(s.Stdout, "not a tty")
				return 1
			}}
		default:
			return usage("unknown mode %q", mode)
		}
	}
}

// parseSeconds parses testbin's fractional, non-negative SECONDS.
func parseSeconds(s string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// parseAlloc parses alloc's MB, returning testbin's complaint if bad.
func parseAlloc(args []string) (int, string) {
	if len(args) == 0 {
		return 0, "alloc: MB is required"
	}
	mb, err := strconv.Atoi(args[0])
	if err != nil || mb < 0 {
		return 0, fmt.Sprintf("alloc: bad MB %q", args[0])
	}
	return mb, ""
}

// oomKills reports whether allocating mb MiB exceeds a memory limit.
func oomKills(mb int, limit int64) bool {
	return limit > 0 && int64(mb)<<20 >= limit
}

// testbinWrite is testbin's write mode: the file is written through the
// container's mount of PATH, if it has one, when the container is
// created (the fake runs its Behavior then).
func testbinWrite(args []string, cfg *runtimeapi.ContainerConfig) Program {
	if len(args) < 2 {
		return testbinUsage("write: want PATH TEXT [N]")
	}
	code := 0
	if len(args) > 2 {
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return testbinUsage("write: bad N %q", args[2])
		}
		code = n
	}
	for _, m := range cfg.GetMounts() {
		if m.GetContainerPath() != args[0] {
			continue
		}
		if err := os.WriteFile(m.GetHostPath(), []byte(args[1]), 0o644); err != nil {
			return Program{Exits: true, ExitCode: 1, Stderr: []string{err.Error()}}
		}
	}
	return Program{Exits: true, ExitCode: exitCode(code)}
}
