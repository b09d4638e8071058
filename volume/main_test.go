package volume

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestMain records tmpfs mounts instead of making them: unit tests need
// not run as root. The integration tests that mount for real call
// hostMountsFor (tmpfs_integration_test.go).
func TestMain(m *testing.M) {
	mnt = &fakeMounts{mounted: map[string]string{}}
	os.Exit(m.Run())
}

// fakeMounts records the tmpfs mounts (dir -> options).
type fakeMounts struct {
	mu      sync.Mutex
	mounted map[string]string
	count   int
}

func (f *fakeMounts) mountTmpfs(dir, opts string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.mounted[dir]; ok {
		return errors.New("mounted twice")
	}
	f.mounted[dir] = opts
	f.count++
	return nil
}

func (f *fakeMounts) unmount(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.mounted[dir]; !ok {
		return errors.New("not mounted")
	}
	delete(f.mounted, dir)
	return nil
}

func (f *fakeMounts) bindMount(src, dir string, readOnly bool) error {
	opts := "bind:" + src
	if readOnly {
		opts += ",ro"
	}
	return f.mountTmpfs(dir, opts)
}

func (f *fakeMounts) mountsBelow(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.mounted {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeMounts) isMountPoint(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.mounted[dir]
	return ok
}

// fakeMountsFor gives t a fresh record of mounts.
func fakeMountsFor(t *testing.T) *fakeMounts {
	f := &fakeMounts{mounted: map[string]string{}}
	swapMounter(t, f)
	return f
}

func swapMounter(t *testing.T, m mounter) {
	old := mnt
	mnt = m
	t.Cleanup(func() { mnt = old })
}
