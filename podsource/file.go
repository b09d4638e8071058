package podsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
)

// FileConfig configures a FileSource.
type FileConfig struct {
	// Path is a directory of manifests or a single manifest file
	// (kubelet --pod-manifest-path / staticPodPath). Default
	// /etc/kubernetes/manifests.
	Path string
	// NodeName is required: it is hashed into UIDs and suffixed to names.
	NodeName string
	// Name is the source's name in the mux. Default "file".
	Name string
	// CheckPeriod is the full re-read period (--file-check-frequency).
	// Default 20s.
	CheckPeriod time.Duration
	// MaxFileBytes caps a manifest file; a larger one is an invalid
	// manifest (its last good pod is kept). Default 10 MiB, as the URL
	// source's MaxBodyBytes.
	MaxFileBytes int64
	// Strict rejects unknown and duplicate fields.
	Strict  bool
	Clock   clock.WithTicker
	Log     logr.Logger
	Metrics *Metrics
}

// FileSource reads static pods from a directory of manifests (default
// /etc/kubernetes/manifests) or a single file: YAML or JSON, one Pod per
// file; dotfiles are ignored and subdirectories not recursed into. Changes
// are seen at once through fsnotify, and every CheckPeriod (20s,
// --file-check-frequency) all files are re-read as a safety net (lost events,
// a directory that did not exist yet). Adding, editing (in place, or an
// editor writing a temp file and renaming it over) and removing a file adds,
// changes and removes its pod. Symlinks are followed; for a link pointing
// outside the directory the target's directory is watched too, so edits of
// the target and link swaps are seen at once. A path that holds no manifest
// (an empty file, a dangling symlink, a directory, a symlink loop, a file
// over MaxFileBytes, 10 MiB) is logged once with its path when it gets that
// way, not at every re-read.
//
// A file that becomes invalid keeps the last good version of its pod (the
// kubelet drops it): a typo during an edit must not kill a running static
// pod, such as the kube-apiserver's. The error is logged with the file and
// field path, counted in podsource_invalid_manifests_total and listed by
// Errors until the file is fixed or deleted. A file that becomes empty
// (being written: truncate, then write) also keeps its last pod. Deleting
// the file removes the pod.
//
// Two files with one namespace/name or one UID are settled here, where the
// paths are known: the file whose pod was sent first keeps it (on a first
// read, the first by path), the other is held back, logged once with both
// paths, counted, and listed by Errors until the conflict ends.
type FileSource struct {
	cfg  FileConfig
	sink Sink
	log  logr.Logger

	dirMode bool
	// state, owned by Run's goroutine; mu guards it for Errors.
	mu      sync.Mutex
	files   map[string]*fileEntry
	extDirs map[string]int // directories of symlink targets we watch
	watcher *fsnotify.Watcher
	watched bool
	sent    bool
}

type fileEntry struct {
	raw       []byte
	pod       *v1.Pod // last good pod, kept while the file is invalid
	err       error
	targetDir string // for a symlink outside the watched directory: its target's directory
	// state is the condition last logged for the file ("" when fine), so
	// that a skipped or unreadable file is logged once, not on every re-read.
	state string
	// conflict is set while the file's pod is held back because another
	// file's pod has its name or UID; sent while its pod is in the set.
	conflict *ManifestError
	sent     bool
}

// NewFileSource returns a FileSource sending to sink.
func NewFileSource(cfg FileConfig, sink Sink) (*FileSource, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("podsource: FileConfig.NodeName is required")
	}
	if cfg.Path == "" {
		cfg.Path = DefaultManifestPath
	}
	cfg.Path = filepath.Clean(cfg.Path)
	if cfg.Name == "" {
		cfg.Name = SourceFile
	}
	if cfg.CheckPeriod <= 0 {
		cfg.CheckPeriod = DefaultFileCheckFrequency
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 10 << 20
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &FileSource{cfg: cfg, sink: sink, log: cfg.Log.WithValues("source", cfg.Name, "path", cfg.Path),
		files: map[string]*fileEntry{}, extDirs: map[string]int{}}, nil
}

// Name is the source's name in the mux.
func (s *FileSource) Name() string { return s.cfg.Name }

// Errors lists the manifests that are currently invalid or held back by a
// conflict with another file (each a *ManifestError naming the file and the
// field paths; a conflict names the other file too), sorted by file.
func (s *FileSource) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := make([]string, 0)
	for p, e := range s.files {
		if e.err != nil || e.conflict != nil {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	out := make([]error, 0, len(paths))
	for _, p := range paths {
		if e := s.files[p]; e.err != nil {
			out = append(out, e.err)
		} else {
			out = append(out, e.conflict)
		}
	}
	return out
}

// Run reads the manifests, sends the first set, then follows changes until
// ctx ends. It returns nil when ctx ends, or an error if the watcher cannot
// be created or the sink fails.
func (s *FileSource) Run(ctx context.Context) error {
	// Unbuffered, as the kubelet's: the kernel's inotify queue holds the
	// events while a batch is read, and an overflow re-reads everything. A
	// 4096-event channel held 160 KB for a directory that rarely changes.
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("podsource: file source %s: %w", s.cfg.Path, err)
	}
	defer w.Close()
	s.watcher = w
	ticker := s.cfg.Clock.NewTicker(s.cfg.CheckPeriod)
	defer ticker.Stop()

	s.watch()
	s.resync()
	if err := s.send(ctx, true); err != nil {
		return nilIfDone(ctx, err)
	}
	for {
		var changed bool
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			s.watch()
			changed = s.resync()
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			dirty := map[string]struct{}{}
			full := s.event(ev, dirty)
		drain:
			for {
				select {
				case ev, ok := <-w.Events:
					if !ok {
						break drain
					}
					full = s.event(ev, dirty) || full
				default:
					break drain
				}
			}
			if full {
				s.watch()
				changed = s.resync()
			} else {
				for p := range dirty {
					changed = s.readFile(p) || changed
				}
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// Usually an inotify queue overflow: events were lost.
			s.log.Error(err, "File watch error; re-reading all manifests")
			s.cfg.Metrics.fetchError(s.cfg.Name)
			changed = s.resync()
		}
		if err := s.send(ctx, changed); err != nil {
			return nilIfDone(ctx, err)
		}
	}
}

func nilIfDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// watch (re)establishes the watch on the directory (or the file's
// directory, so that renames over the file are seen).
func (s *FileSource) watch() {
	info, err := os.Stat(s.cfg.Path)
	if err != nil {
		// Not there (yet): the periodic re-read tries again.
		s.log.V(2).Info("Cannot watch manifest path yet; relying on the periodic re-read", "err", err.Error())
		return
	}
	dirMode := info.IsDir()
	if s.watched && dirMode == s.dirMode {
		return
	}
	if s.watched { // a file became a directory or the reverse
		_ = s.watcher.Remove(s.watchedDir())
		s.watched = false
	}
	s.dirMode = dirMode
	if err := s.watcher.Add(s.watchedDir()); err != nil {
		s.log.V(2).Info("Cannot watch manifest path yet; relying on the periodic re-read", "dir", s.watchedDir(), "err", err.Error())
		return
	}
	s.watched = true
}

// watchedDir is the directory watched: the manifest directory, or the
// manifest file's directory (so that renames over the file are seen).
func (s *FileSource) watchedDir() string {
	if s.dirMode {
		return s.cfg.Path
	}
	return filepath.Dir(s.cfg.Path)
}

// event maps one fsnotify event to the files to re-read; it returns true
// when a full re-read is needed.
func (s *FileSource) event(ev fsnotify.Event, dirty map[string]struct{}) bool {
	name := filepath.Clean(ev.Name)
	if name == s.cfg.Path && s.dirMode {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			s.watched = false
		}
		return true
	}
	dir := filepath.Dir(name)
	if (s.dirMode && dir == s.cfg.Path) || (!s.dirMode && name == s.cfg.Path) {
		if !strings.HasPrefix(filepath.Base(name), ".") {
			dirty[name] = struct{}{}
		}
		return false
	}
	if !s.dirMode && dir == filepath.Dir(s.cfg.Path) && name != s.cfg.Path {
		return false // a sibling of the single manifest file
	}
	if _, ok := s.extDirs[dir]; ok {
		for p, e := range s.files {
			if e.targetDir == dir {
				dirty[p] = struct{}{}
			}
		}
	}
	return false
}

// resync re-reads every manifest; it reports whether any pod changed.
func (s *FileSource) resync() bool {
	var paths []string
	if s.dirMode {
		ents, err := os.ReadDir(s.cfg.Path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Keep what we have: an unreadable directory is not an empty one.
			s.log.Error(err, "Cannot read manifest directory; keeping the last set")
			s.cfg.Metrics.fetchError(s.cfg.Name)
			return false
		}
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				paths = append(paths, filepath.Join(s.cfg.Path, e.Name()))
			}
		}
	} else {
		paths = []string{s.cfg.Path}
	}
	changed := false
	present := make(map[string]struct{}, len(paths))
	for _, p := range paths {
		present[p] = struct{}{}
		changed = s.readFile(p) || changed
	}
	for p := range s.files {
		if _, ok := present[p]; !ok {
			changed = s.drop(p) || changed
		}
	}
	return changed
}

func (s *FileSource) drop(path string) bool {
	e, ok := s.files[path]
	if !ok {
		return false
	}
	s.setTargetDir(e, "")
	s.mu.Lock()
	delete(s.files, path)
	s.mu.Unlock()
	return e.pod != nil
}

// readFile re-reads one manifest; it reports whether its pod changed. A
// file that cannot be used is logged once per condition (state), not on
// every re-read.
func (s *FileSource) readFile(path string) bool {
	info, err := os.Stat(path) // follows symlinks
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			return s.skip(path, "dangling", "Manifest is a symlink to nothing; skipped", "target", target)
		}
		return s.drop(path) // gone
	case err != nil:
		// A symlink loop, a permission problem: not the file's content, so
		// keep its pod (as for an invalid file) until it is fixed or deleted.
		return s.keep(path, "stat:"+err.Error(), "Cannot stat manifest; keeping its pod if it had one", err)
	case !info.Mode().IsRegular():
		// A directory (not recursed into, as the kubelet) or a special file.
		return s.skip(path, "irregular", "Manifest path is not a regular file; skipped", "type", info.Mode().Type().String())
	case info.Size() > s.cfg.MaxFileBytes:
		e := s.entry(path)
		state := fmt.Sprintf("too large:%d:%d", info.Size(), info.ModTime().UnixNano())
		if e.state == state {
			return false
		}
		e.raw = nil
		return s.invalid(path, e, state, &ManifestError{Origin: path,
			Err: fmt.Errorf("file is %d bytes, over the limit of %d (FileConfig.MaxFileBytes)", info.Size(), s.cfg.MaxFileBytes)})
	}
	data, err := readAtMost(path, s.cfg.MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return s.drop(path)
	}
	if err != nil {
		return s.keep(path, "read:"+err.Error(), "Cannot read manifest; keeping its pod if it had one", err)
	}
	e := s.entry(path)
	s.setTargetDir(e, s.externalTargetDir(path))
	if e.raw != nil && bytes.Equal(e.raw, data) {
		return false
	}
	e.raw = data
	if len(bytes.TrimSpace(data)) == 0 {
		// Being written (truncate, then write): keep the last good pod.
		if e.pod != nil {
			s.note(path, e, "empty", func(log logr.Logger) {
				log.Info("Manifest is empty; keeping its pod until it has content or is deleted")
			})
		} else {
			s.note(path, e, "empty", func(log logr.Logger) { log.Info("Manifest is empty; skipped") })
		}
		return false
	}
	parsed, perr := Parse(data, ParseOptions{Kind: SourceFile, Origin: path, NodeName: s.cfg.NodeName, Strict: s.cfg.Strict})
	if perr == nil && parsed[0].Err != nil {
		perr = parsed[0].Err
	}
	if perr != nil {
		// The content changed (or it would not be parsed again): log it.
		return s.invalid(path, e, "invalid", perr)
	}
	s.mu.Lock()
	e.err = nil
	s.mu.Unlock()
	s.note(path, e, "", nil)
	e.pod = parsed[0].Pod
	return true
}

// entry is path's entry, created if new.
func (s *FileSource) entry(path string) *fileEntry {
	e, ok := s.files[path]
	if !ok {
		e = &fileEntry{}
		s.mu.Lock()
		s.files[path] = e
		s.mu.Unlock()
	}
	return e
}

// note logs, through logf, that path entered state (nothing if it was in
// it already); state "" is the file being fine again.
func (s *FileSource) note(path string, e *fileEntry, state string, logf func(logr.Logger)) {
	if e.state == state {
		return
	}
	if state == "" {
		s.log.Info("Manifest usable again", "file", path)
	} else if logf != nil {
		logf(s.log.WithValues("file", path))
	}
	e.state = state
}

// invalid records a manifest that cannot be used, in state; its last good
// pod stays. Callers call it only for a manifest that changed.
func (s *FileSource) invalid(path string, e *fileEntry, state string, err error) bool {
	s.mu.Lock()
	e.err = err
	s.mu.Unlock()
	s.cfg.Metrics.invalidManifest(s.cfg.Name)
	e.state = state
	if e.pod != nil {
		s.log.Error(err, "Invalid manifest; keeping the last good version of its pod until it is fixed or deleted", "file", path, "pod", FullName(e.pod))
	} else {
		s.log.Error(err, "Invalid manifest; skipped", "file", path)
	}
	return false
}

// skip records a path that holds no manifest (a dangling symlink, a
// directory): it has no pod, logged once per state.
func (s *FileSource) skip(path, state, msg string, kv ...any) bool {
	e := s.entry(path)
	s.setTargetDir(e, "")
	s.note(path, e, state, func(log logr.Logger) { log.Info(msg, kv...) })
	had := e.pod != nil
	s.mu.Lock()
	e.pod, e.raw, e.err = nil, nil, nil
	s.mu.Unlock()
	return had
}

// keep records a file that cannot be read for now: its pod stays, the
// error is logged and counted once per state.
func (s *FileSource) keep(path, state, msg string, err error) bool {
	e := s.entry(path)
	s.note(path, e, state, func(log logr.Logger) {
		log.Error(err, msg)
		s.cfg.Metrics.fetchError(s.cfg.Name)
	})
	return false
}

// readAtMost reads a file of at most max bytes (it may have grown since
// its size was read).
func readAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("file grew over the limit of %d bytes (FileConfig.MaxFileBytes) while being read", max)
	}
	return data, err
}

// externalTargetDir is, for a symlink that points outside the watched
// directory, the directory of its final target (watched too, so that edits
// of the target are seen at once); "" otherwise.
func (s *FileSource) externalTargetDir(path string) string {
	li, err := os.Lstat(path)
	if err != nil || li.Mode()&fs.ModeSymlink == 0 {
		return ""
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(target)
	if dir == s.watchedDir() {
		return ""
	}
	return dir
}

func (s *FileSource) setTargetDir(e *fileEntry, dir string) {
	if e.targetDir == dir {
		return
	}
	if old := e.targetDir; old != "" {
		if s.extDirs[old]--; s.extDirs[old] <= 0 {
			delete(s.extDirs, old)
			_ = s.watcher.Remove(old)
		}
	}
	e.targetDir = dir
	if dir != "" {
		if s.extDirs[dir] == 0 {
			if err := s.watcher.Add(dir); err != nil {
				s.log.V(2).Info("Cannot watch symlink target directory; relying on the periodic re-read", "dir", dir, "err", err.Error())
			}
		}
		s.extDirs[dir]++
	}
}

// send sends the full set when something changed (or always, with force).
func (s *FileSource) send(ctx context.Context, force bool) error {
	if !force && s.sent {
		return nil
	}
	pods := s.resolveConflicts()
	s.sent = true
	return s.sink.Update(ctx, PodUpdate{Op: SET, Pods: pods, Source: s.cfg.Name})
}

// resolveConflicts returns the pods to send, sorted by file: of two files
// whose pods share a namespace/name or a UID, the one already sent keeps
// it (else the first by path) and the other is held back, logged once
// with both paths, counted in podsource_conflicts_total and listed by
// Errors until the conflict ends.
func (s *FileSource) resolveConflicts() []*v1.Pod {
	paths := make([]string, 0, len(s.files))
	for p, e := range s.files {
		if e.pod != nil {
			paths = append(paths, p)
		}
	}
	// Incumbents first, so that a new file cannot take a running pod's name.
	sort.Slice(paths, func(i, j int) bool {
		a, b := s.files[paths[i]], s.files[paths[j]]
		if a.sent != b.sent {
			return a.sent
		}
		return paths[i] < paths[j]
	})
	for _, e := range s.files {
		e.sent = false // set again below for the pods sent now
		if e.pod == nil {
			s.setConflict(e, nil)
		}
	}
	byName := make(map[string]string, len(paths))
	byUID := make(map[string]string, len(paths))
	kept := make([]string, 0, len(paths))
	for _, p := range paths {
		e := s.files[p]
		name, uid := FullName(e.pod), string(e.pod.UID)
		var conflict *ManifestError
		if other, ok := byName[name]; ok {
			conflict = &ManifestError{Origin: p, Fields: field.ErrorList{{Type: field.ErrorTypeDuplicate,
				Field: "metadata.name", BadValue: name, Detail: "the pod of " + other + " has this namespace/name"}}}
		} else if other, ok := byUID[uid]; ok {
			conflict = &ManifestError{Origin: p, Fields: field.ErrorList{{Type: field.ErrorTypeDuplicate,
				Field: "metadata.uid", BadValue: uid, Detail: "the pod of " + other + " has this UID"}}}
		}
		if conflict != nil {
			if e.conflict == nil || e.conflict.Error() != conflict.Error() {
				s.log.Error(conflict, "Manifest conflicts with another file; its pod is held back", "file", p, "pod", name, "podUID", uid)
				s.cfg.Metrics.conflict(s.cfg.Name)
			}
			s.setConflict(e, conflict)
			continue
		}
		if e.conflict != nil {
			s.log.Info("Manifest no longer conflicts with another file; its pod passes", "file", p, "pod", name)
			s.setConflict(e, nil)
		}
		byName[name], byUID[uid] = p, p
		kept = append(kept, p)
	}
	sort.Strings(kept)
	pods := make([]*v1.Pod, 0, len(kept))
	for _, p := range kept {
		s.files[p].sent = true
		pods = append(pods, s.files[p].pod)
	}
	return pods
}

func (s *FileSource) setConflict(e *fileEntry, c *ManifestError) {
	s.mu.Lock()
	e.conflict = c
	s.mu.Unlock()
}
