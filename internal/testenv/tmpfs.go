package testenv

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// MountTmpfs mounts a tmpfs of size bytes on dir (made if missing),
// unmounted when the test ends: exact sizes for tests of disk usage. It
// needs root (build tag integration, run by hack/test.sh).
func MountTmpfs(t testing.TB, dir string, size int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("mounting tmpfs needs root: run through hack/test.sh")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Fatalf("mounting tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
}
