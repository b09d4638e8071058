package podsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	// Strict rejects unknown and duplicate fields.
	Strict  bool
	Clock   clock.WithTicker
	Log     logr.Logger
	Metrics *Metrics
}

// FileSource reads static pods from a directory or a file; see the package
// documentation.
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
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &FileSource{cfg: cfg, sink: sink, log: cfg.Log.WithValues("source", cfg.Name, "path", cfg.Path),
		files: map[string]*fileEntry{}, extDirs: map[string]int{}}, nil
}

// Name is the source's name in the mux.
func (s *FileSource) Name() string { return s.cfg.Name }

// Errors lists the manifests that are currently invalid (each a
// *ManifestError naming the file and the field paths).
func (s *FileSource) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := make([]string, 0)
	for p, e := range s.files {
		if e.err != nil {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	out := make([]error, 0, len(paths))
	for _, p := range paths {
		out = append(out, s.files[p].err)
	}
	return out
}

// Run reads the manifests, sends the first set, then follows changes until
// ctx ends. It returns nil when ctx ends, or an error if the watcher cannot
// be created or the sink fails.
func (s *FileSource) Run(ctx context.Context) error {
	w, err := fsnotify.NewBufferedWatcher(4096)
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

// readFile re-reads one manifest; it reports whether its pod changed.
func (s *FileSource) readFile(path string) bool {
	info, err := os.Stat(path) // follows symlinks
	if err != nil || !info.Mode().IsRegular() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Error(err, "Cannot stat manifest; keeping its pod", "file", path)
			s.cfg.Metrics.fetchError(s.cfg.Name)
			return false
		}
		return s.drop(path) // gone, a directory (not recursed into, as the kubelet) or special
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return s.drop(path)
		}
		s.log.Error(err, "Cannot read manifest; keeping its pod", "file", path)
		s.cfg.Metrics.fetchError(s.cfg.Name)
		return false
	}
	e, ok := s.files[path]
	if !ok {
		e = &fileEntry{}
		s.mu.Lock()
		s.files[path] = e
		s.mu.Unlock()
	}
	s.setTargetDir(e, s.externalTargetDir(path))
	if ok && bytes.Equal(e.raw, data) {
		return false
	}
	e.raw = data
	if len(bytes.TrimSpace(data)) == 0 {
		// Being written (truncate, then write): keep the last good pod.
		return false
	}
	parsed, perr := Parse(data, ParseOptions{Kind: SourceFile, Origin: path, NodeName: s.cfg.NodeName, Strict: s.cfg.Strict})
	if perr == nil && parsed[0].Err != nil {
		perr = parsed[0].Err
	}
	s.mu.Lock()
	e.err = perr
	s.mu.Unlock()
	if perr != nil {
		s.cfg.Metrics.invalidManifest(s.cfg.Name)
		if e.pod != nil {
			s.log.Error(perr, "Invalid manifest; keeping the last good version of its pod until it is fixed or deleted", "file", path, "pod", FullName(e.pod))
		} else {
			s.log.Error(perr, "Invalid manifest; skipped", "file", path)
		}
		return false
	}
	e.pod = parsed[0].Pod
	return true
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
	paths := make([]string, 0, len(s.files))
	for p, e := range s.files {
		if e.pod != nil {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	pods := make([]*v1.Pod, 0, len(paths))
	for _, p := range paths {
		pods = append(pods, s.files[p].pod)
	}
	s.sent = true
	return s.sink.Update(ctx, PodUpdate{Op: SET, Pods: pods, Source: s.cfg.Name})
}
