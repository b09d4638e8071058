// Package testenv gives tests the real parts the project's hack/ scripts
// start: a containerd with nodekit's test images; and tmpfs mounts, for
// exact disk usage (MountTmpfs). Tests that use it carry
// the "integration" build tag and FAIL (never skip) when the part is missing,
// with a message saying how to start it.
package testenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodekit-dev/nodekit/runtime"
)

// Images built and imported by hack/containerd-up.sh.
const (
	PauseImage     = "nodekit.local/pause:1"
	TestImage      = "nodekit.local/testbin:1"
	RemovableImage = "nodekit.local/removable:1"
)

// CgroupRoot is the cgroup (cgroupfs form) under which tests place pods;
// hack/containerd-down.sh removes what tests leave there.
const CgroupRoot = "/nodekit-test"

// Containerd describes the running test containerd.
type Containerd struct {
	Endpoint string
	Dir      string
	PIDFile  string
	ImageDir string
	Ctr      string
	// CertsDir is the CRI registry config_path (certs.d): a test that runs
	// a registry writes <host:port>/hosts.toml there; "" when the
	// containerd-up.sh that started containerd predates it.
	CertsDir string
}

// NeedContainerd returns the test containerd, failing the test when it is
// not set up.
func NeedContainerd(t testing.TB) Containerd {
	t.Helper()
	c := Containerd{
		Endpoint: os.Getenv("NODEKIT_CRI_ENDPOINT"),
		Dir:      os.Getenv("NODEKIT_CONTAINERD_DIR"),
		PIDFile:  os.Getenv("NODEKIT_CONTAINERD_PIDFILE"),
		ImageDir: os.Getenv("NODEKIT_IMAGE_DIR"),
		Ctr:      os.Getenv("NODEKIT_CTR"),
		CertsDir: os.Getenv("NODEKIT_CONTAINERD_CERTS_D"),
	}
	if c.Endpoint == "" || c.Dir == "" || c.ImageDir == "" {
		t.Fatal("real containerd not configured: NODEKIT_CRI_ENDPOINT, NODEKIT_CONTAINERD_DIR and NODEKIT_IMAGE_DIR " +
			"must be set. Run the tests with hack/test.sh, or run hack/containerd-up.sh and `. /tmp/nodekit-containerd/env`.")
	}
	if c.Ctr == "" {
		c.Ctr = "ctr"
	}
	return c
}

// Dial connects a runtime client to the test containerd.
func (c Containerd) Dial(t testing.TB, opts ...runtime.Option) *runtime.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := runtime.Dial(ctx, c.Endpoint, opts...)
	if err != nil {
		t.Fatalf("containerd at %s does not answer: %v (see %s/containerd.log)", c.Endpoint, err, c.Dir)
	}
	t.Cleanup(func() { cl.Close(context.Background()) })
	return cl
}

// ImportImage imports one of the image archives hack/containerd-up.sh built
// (pause.tar, testbin.tar, removable.tar), named by its reference.
func (c Containerd) ImportImage(t testing.TB, ref string) {
	t.Helper()
	name := strings.TrimPrefix(ref, "nodekit.local/")
	name = name[:strings.IndexByte(name, ':')]
	archive := filepath.Join(c.ImageDir, name+".tar")
	sock := strings.TrimPrefix(c.Endpoint, "unix://")
	out, err := exec.Command(c.Ctr, "-a", sock, "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr import %s: %v: %s", archive, err, out)
	}
}

// PID returns containerd's pid from its pid file.
func (c Containerd) PID(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(c.PIDFile)
	if err != nil {
		t.Fatalf("containerd pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("containerd pid file %s: %v", c.PIDFile, err)
	}
	return pid
}

// Kill kills containerd by pid (SIGKILL, as a crash would) and waits for it to die.
func (c Containerd) Kill(t testing.TB) {
	t.Helper()
	pid := c.PID(t)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill containerd %d: %v", pid, err)
	}
	for i := 0; i < 100; i++ {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); len(b) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("containerd %d did not die", pid)
}

// Start starts containerd again after Kill with hack/containerd-up.sh
// --restart-only, which waits until CRI answers.
func (c Containerd) Start(t testing.TB) {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "hack", "containerd-up.sh")
	cmd := exec.Command("bash", script, "--restart-only")
	cmd.Env = append(os.Environ(), "NODEKIT_CONTAINERD_DIR="+c.Dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s --restart-only: %v\n%s", script, err, out)
	}
}

// CgroupParent is the cgroup parent tests give the pod with this UID.
func CgroupParent(uid string) string { return CgroupRoot + "/pod" + uid }

// RemovePodCgroup removes the pod cgroup from every hierarchy and fails the
// test if one cannot be removed (processes left behind).
func RemovePodCgroup(t testing.TB, uid string) {
	t.Helper()
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + CgroupParent(uid))
	for _, d := range dirs {
		// Container cgroups below it are removed by runc; wait briefly for
		// the kernel to let go of them.
		var err error
		for i := 0; i < 40; i++ {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			t.Errorf("pod cgroup %s left behind: %v (processes: %q)", d, err, strings.TrimSpace(string(procs)))
		}
	}
}

// RepoRoot finds the module root from the test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack")); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root not found")
		}
		dir = parent
	}
}

// PrivateContainerd starts a containerd of the test's own (state in a fresh
// directory) with hack/containerd-up.sh, for tests that kill and restart the
// runtime without disturbing other tests; it is purged when the test ends.
func PrivateContainerd(t testing.TB, name string) Containerd {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "nodekit-"+name+"-"+strconv.Itoa(os.Getpid()))
	root := RepoRoot(t)
	env := append(os.Environ(), "NODEKIT_CONTAINERD_DIR="+dir, "NODEKIT_KEEP_CGROUPS=1")
	t.Cleanup(func() {
		cmd := exec.Command("bash", filepath.Join(root, "hack", "containerd-down.sh"), "--purge")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("containerd-down.sh --purge (%s): %v\n%s", dir, err, out)
		}
	})
	cmd := exec.Command("bash", filepath.Join(root, "hack", "containerd-up.sh"))
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("containerd-up.sh (%s): %v\n%s", dir, err, out)
	}
	vars, err := readEnvFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatalf("containerd-up.sh (%s): %v", dir, err)
	}
	return Containerd{
		Endpoint: vars["NODEKIT_CRI_ENDPOINT"],
		Dir:      dir,
		PIDFile:  vars["NODEKIT_CONTAINERD_PIDFILE"],
		ImageDir: vars["NODEKIT_IMAGE_DIR"],
		// The ctr of the containerd the script started (built containerd 2
		// or Debian's 1.6), never whichever is first on PATH.
		Ctr:      vars["NODEKIT_CTR"],
		CertsDir: vars["NODEKIT_CONTAINERD_CERTS_D"],
	}
}

// readEnvFile reads the "export KEY=VALUE" lines hack/containerd-up.sh
// writes; values with shell quoting (printf %q of anything but plain
// characters) are an error, as the script's paths never need it.
func readEnvFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		kv, ok := strings.CutPrefix(line, "export ")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 || strings.ContainsAny(v, "'\"\\$ ") {
			return nil, errors.New(path + ": unexpected line " + strconv.Quote(line))
		}
		env[k] = v
	}
	for _, k := range []string{"NODEKIT_CRI_ENDPOINT", "NODEKIT_CONTAINERD_PIDFILE", "NODEKIT_IMAGE_DIR", "NODEKIT_CTR"} {
		if env[k] == "" {
			return nil, errors.New(path + ": no " + k)
		}
	}
	return env, nil
}
