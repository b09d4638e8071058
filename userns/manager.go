package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podpath"
)

// DefaultIDsPerPod is the kubelet's userNamespaces.idsPerPod default.
const DefaultIDsPerPod = 65536

// DefaultMaxPods is the kubelet's maxPods default.
const DefaultMaxPods = 110

// unitLength is what IDsPerPod must be a multiple of.
const unitLength = 65536

// MappingsFile is the name of a pod's mappings file in its pod directory,
// the kubelet's.
const MappingsFile = "userns"

// ErrExhausted is returned by PodMapping when every slot of the range is
// taken.
var ErrExhausted = errors.New("could not find an empty slot to allocate a user namespace")

// UnsupportedError is returned by PodMapping for a pod with hostUsers:
// false when the runtime handler does not support user namespaces; its
// message is the kubelet's.
type UnsupportedError struct {
	// Handler is the RuntimeClass handler ("" the runtime's default).
	Handler string
	// Err is why support could not be told (an unknown handler), or nil.
	Err error
}

func (e *UnsupportedError) Error() string {
	msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if e.Handler != "" {
		msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", e.Handler)
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

func (e *UnsupportedError) Unwrap() error { return e.Err }

// Handlers tells whether a runtime handler supports user namespaces; the
// kubelet asks the runtime's status (StatusResponse.runtime_handlers, the
// handler's features.user_namespaces); an unknown handler is an error.
type Handlers interface {
	SupportsUserNamespaces(handler string) (bool, error)
}

// HandlersFunc adapts a function to Handlers.
type HandlersFunc func(handler string) (bool, error)

// SupportsUserNamespaces calls f.
func (f HandlersFunc) SupportsUserNamespaces(handler string) (bool, error) { return f(handler) }

// Config configures a Manager.
type Config struct {
	// Layout gives the pod directories (default: the kubelet's root dir).
	Layout podpath.Layout
	// IDsPerPod is the kubelet's userNamespaces.idsPerPod: a multiple of
	// 65536 (default 65536).
	IDsPerPod uint32
	// MaxPods is the kubelet's maxPods: the range must hold that many
	// pods (default 110).
	MaxPods int
	// Range returns the first host ID and the length of the range the
	// slots come from (default SubIDs{}.Range).
	Range func(idsPerPod uint32) (first, length uint32, err error)
	// Handlers says which runtime handlers support user namespaces;
	// required.
	Handlers Handlers
	// Rand returns a number in [0, n), where a slot search starts
	// (default math/rand/v2's IntN).
	Rand func(n int) int
	Log  logr.Logger
}

// Manager allocates the pods' user namespaces; safe for concurrent use.
type Manager struct {
	cfg       Config
	off, size uint32 // the range in slots: [off, off+size)

	mu     sync.Mutex
	used   []bool               // by slot index - off
	usedBy map[types.UID]uint32 // pod -> first host ID
}

// idMapping and fileMappings are the kubelet's file format.
type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

type fileMappings struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

// New returns a Manager over the configured range, with the slots of the
// pods that have a mappings file in their pod directory taken.
func New(cfg Config) (*Manager, error) {
	if cfg.Handlers == nil {
		return nil, errors.New("userns: Config.Handlers is required")
	}
	if cfg.IDsPerPod == 0 {
		cfg.IDsPerPod = DefaultIDsPerPod
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	if cfg.Range == nil {
		cfg.Range = SubIDs{}.Range
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.IntN
	}
	n := cfg.IDsPerPod
	if n%unitLength != 0 {
		return nil, fmt.Errorf("kubelet user namespace length %v is not a multiple of %d", n, unitLength)
	}
	first, length, err := cfg.Range(n)
	if err != nil {
		return nil, fmt.Errorf("kubelet mappings: %w", err)
	}
	switch {
	case first%n != 0:
		return nil, fmt.Errorf("kubelet user assigned ID %v is not a multiple of %v", first, n)
	case first < n: // mapping host root would defeat the point
		return nil, fmt.Errorf("kubelet user assigned ID %v must be greater or equal to %v", first, n)
	case length%n != 0:
		return nil, fmt.Errorf("kubelet user assigned IDs length %v is not a multiple of %v", length, n)
	case uint64(length/n) < uint64(cfg.MaxPods):
		return nil, fmt.Errorf("kubelet user assigned IDs are not enough to support %v pods", cfg.MaxPods)
	}
	m := &Manager{cfg: cfg, off: first / n, size: length / n, usedBy: map[types.UID]uint32{}}
	m.used = make([]bool, m.size)
	pods, err := m.podsOnDisk()
	if err != nil {
		return nil, fmt.Errorf("read pods from disk: %w", err)
	}
	for _, uid := range pods {
		if err := m.recordFromFile(uid); err != nil {
			return nil, fmt.Errorf("record pod mappings for existing pod %q: %w", uid, err)
		}
	}
	return m, nil
}

// IDsPerPod is the length of every pod's range.
func (m *Manager) IDsPerPod() uint32 { return m.cfg.IDsPerPod }

// PodMapping returns the host ID that pod's root is and the length of its
// range, the same for UIDs and GIDs, allocated the first time and kept in
// the pod's directory; 0, 0 for a pod with host users (hostUsers unset or
// true). runtimeHandler is the pod's RuntimeClass handler ("" the
// default): a handler without user namespace support is an
// *UnsupportedError; a full range ErrExhausted.
func (m *Manager) PodMapping(pod *v1.Pod, runtimeHandler string) (hostID, length uint32, err error) {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return 0, 0, nil
	}
	if ok, err := m.cfg.Handlers.SupportsUserNamespaces(runtimeHandler); err != nil || !ok {
		return 0, 0, &UnsupportedError{Handler: runtimeHandler, Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if from, ok := m.usedBy[pod.UID]; ok {
		return from, m.cfg.IDsPerPod, nil
	}
	fm, err := m.readFile(pod.UID)
	if err != nil {
		return 0, 0, fmt.Errorf("user namespace: %w", err)
	}
	if fm != nil {
		from, err := m.record(pod.UID, fm)
		if err != nil {
			return 0, 0, fmt.Errorf("user namespace: %w", err)
		}
		return from, m.cfg.IDsPerPod, nil
	}
	from, err := m.allocate(pod.UID)
	if err != nil {
		return 0, 0, fmt.Errorf("create user namespace: %w", err)
	}
	return from, m.cfg.IDsPerPod, nil
}

// Allocated returns the first host ID of the pod's range, if it has one.
func (m *Manager) Allocated(uid types.UID) (hostID uint32, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	hostID, ok = m.usedBy[uid]
	return hostID, ok
}

// Release frees the pod's range and removes its mappings file; a pod with
// none is left alone.
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(uid)
}

// CleanupOrphans frees the range of every pod directory's pod that is not
// among known (the pods the node has, the ones the runtime runs), and of
// every allocation whose pod directory is gone, as the kubelet's
// CleanupOrphanedPodUsernsAllocations.
func (m *Manager) CleanupOrphans(known []types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := make(map[types.UID]bool, len(known))
	for _, uid := range known {
		keep[uid] = true
	}
	found, err := m.podsOnDisk()
	if err != nil {
		return fmt.Errorf("user namespace: read pods from disk: %w", err)
	}
	onDisk := make(map[types.UID]bool, len(found))
	for _, uid := range found {
		onDisk[uid] = true
		if !keep[uid] {
			m.release(uid)
		}
	}
	for uid := range m.usedBy {
		if !onDisk[uid] {
			m.release(uid)
		}
	}
	return nil
}

func (m *Manager) release(uid types.UID) {
	from, ok := m.usedBy[uid]
	if !ok {
		return
	}
	delete(m.usedBy, uid)
	m.used[from/m.cfg.IDsPerPod-m.off] = false
	if dir, err := m.cfg.Layout.PodDir(uid); err == nil {
		if err := os.Remove(filepath.Join(dir, MappingsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.cfg.Log.Error(err, "removing a pod's user namespace mappings", "podUID", uid)
		}
	}
	m.cfg.Log.V(5).Info("released pod user namespace allocation", "podUID", uid, "hostID", from)
}

// allocate takes a free slot for uid, from a random index on, and writes
// the pod's mappings file.
func (m *Manager) allocate(uid types.UID) (uint32, error) {
	start := m.cfg.Rand(int(m.size))
	for i := 0; i < int(m.size); i++ {
		idx := (start + i) % int(m.size)
		if m.used[idx] {
			continue
		}
		from := (uint32(idx) + m.off) * m.cfg.IDsPerPod
		m.used[idx], m.usedBy[uid] = true, from
		if err := m.writeFile(uid, from); err != nil {
			m.release(uid)
			return 0, err
		}
		m.cfg.Log.V(5).Info("new pod user namespace allocation", "podUID", uid, "hostID", from)
		return from, nil
	}
	return 0, ErrExhausted
}

// record takes the slot the file says the pod has.
func (m *Manager) record(uid types.UID, fm *fileMappings) (uint32, error) {
	switch {
	case len(fm.UIDMappings) != 1:
		return 0, errors.New("invalid user namespace configuration: no more than one mapping allowed.")
	case len(fm.GIDMappings) != 1 || fm.UIDMappings[0] != fm.GIDMappings[0]:
		return 0, errors.New("invalid user namespace configuration: GID and UID mapping should be identical")
	case fm.UIDMappings[0].ContainerID != 0:
		return 0, errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	from, length := fm.UIDMappings[0].HostID, fm.UIDMappings[0].Length
	n := m.cfg.IDsPerPod
	if length != n {
		return 0, fmt.Errorf("wrong user namespace length %v", length)
	}
	if from%n != 0 {
		return 0, fmt.Errorf("wrong user namespace offset specified %v", from)
	}
	if prev, ok := m.usedBy[uid]; ok {
		if prev != from {
			return 0, fmt.Errorf("different user namespace range already used by pod %q", uid)
		}
		return from, nil
	}
	idx := int64(from/n) - int64(m.off)
	if idx < 0 || idx >= int64(m.size) {
		return 0, fmt.Errorf("id %v is out of range", from)
	}
	if m.used[idx] {
		return 0, fmt.Errorf("range picked for pod %q already taken", uid)
	}
	m.used[idx], m.usedBy[uid] = true, from
	return from, nil
}

func (m *Manager) recordFromFile(uid types.UID) error {
	fm, err := m.readFile(uid)
	if err != nil || fm == nil {
		return err
	}
	_, err = m.record(uid, fm)
	return err
}

// readFile reads the pod's mappings file; nil, nil when there is none.
func (m *Manager) readFile(uid types.UID) (*fileMappings, error) {
	dir, err := m.cfg.Layout.PodDir(uid)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, MappingsFile))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(data) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var fm fileMappings
	if err := json.Unmarshal(data, &fm); err != nil {
		return nil, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	return &fm, nil
}

// writeFile writes the pod's mappings file durably: a temporary file
// renamed over it, then the directory synced, as the kubelet does.
func (m *Manager) writeFile(uid types.UID, from uint32) error {
	dir, err := m.cfg.Layout.PodDir(uid)
	if err != nil {
		return err
	}
	mp := idMapping{HostID: from, ContainerID: 0, Length: m.cfg.IDsPerPod}
	data, err := json.Marshal(fileMappings{UIDMappings: []idMapping{mp}, GIDMappings: []idMapping{mp}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create user namespace store: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+MappingsFile)
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, MappingsFile))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// podsOnDisk lists the pod directories' UIDs; none when there is no pods
// directory.
func (m *Manager) podsOnDisk() ([]types.UID, error) {
	entries, err := os.ReadDir(m.cfg.Layout.PodsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var uids []types.UID
	for _, e := range entries {
		if e.IsDir() && len(podpath.ValidateUID(e.Name())) == 0 {
			uids = append(uids, types.UID(e.Name()))
		}
	}
	return uids, nil
}
