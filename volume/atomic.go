package volume

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// File is one file of a projected volume: a relative path, its content
// and mode.
type File struct {
	Data []byte
	Mode os.FileMode
}

const dataDir = "..data"

// writeAtomic makes dir hold exactly files, switching from the old set to
// the new at once, as the kubelet's AtomicWriter does: the files go into a
// new hidden directory, the volume is given to fsGroup (its setPerms; nil:
// nothing), the ..data symlink is swapped to the new directory by a
// rename, and each top-level name is a symlink through ..data. A container
// reading the volume sees either the old set or the new, never a mix, nor
// a file its group cannot read yet. It does nothing when the content is
// already current.
func writeAtomic(dir string, files map[string]File, fsGroup *int64) error {
	for p := range files {
		if p == "" || filepath.IsAbs(p) || slices.Contains(strings.Split(p, "/"), "..") || strings.HasPrefix(p, "..") {
			return fmt.Errorf("path %q: must be relative, without '..'", p)
		}
	}
	if current(dir, files, fsGroup) {
		return nil
	}
	old, _ := os.Readlink(filepath.Join(dir, dataDir))
	ts, err := os.MkdirTemp(dir, "..ts_")
	if err != nil {
		return err
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	for p, f := range files {
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(full, f.Mode); err != nil { // not the umask's
			return err
		}
	}
	// The whole volume: the first write also makes files outside ts.
	if err := SetVolumeOwnership(dir, fsGroup, nil, true); err != nil {
		return err
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(ts), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDir)); err != nil {
		return err
	}
	top := map[string]bool{}
	for p := range files {
		top[strings.SplitN(p, "/", 2)[0]] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries { // names of the old set that the new lacks
		if !strings.HasPrefix(e.Name(), "..") && !top[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataDir, name) {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDir, name), link); err != nil {
			return err
		}
	}
	if old != "" && old != filepath.Base(ts) {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// current reports whether dir's ..data already holds exactly files, with
// their modes (plus group read and the group, with an fsGroup).
func current(dir string, files map[string]File, fsGroup *int64) bool {
	data := filepath.Join(dir, dataDir)
	n := 0
	err := filepath.WalkDir(data+"/", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(data, p)
		f, ok := files[rel]
		info, ierr := d.Info()
		got, rerr := os.ReadFile(p)
		if !ok || ierr != nil || rerr != nil || !bytes.Equal(got, f.Data) || !owned(info, f.Mode, fsGroup) {
			return fmt.Errorf("differs")
		}
		return nil
	})
	return err == nil && n == len(files)
}

// owned: info has mode, and with an fsGroup its group and group read.
func owned(info os.FileInfo, mode os.FileMode, fsGroup *int64) bool {
	if fsGroup == nil {
		return info.Mode().Perm() == mode.Perm()
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int64(st.Gid) == *fsGroup && info.Mode().Perm() == (mode|roMask).Perm()
}
