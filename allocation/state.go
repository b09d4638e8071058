package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The checkpoint files' names under Config.StateDir, the kubelet's.
const (
	AllocatedStateFile = "allocated_pods_state"
	ActuatedStateFile  = "actuated_pods_state"
)

// podResources are one pod's containers' resources, by container name.
type podResources map[string]v1.ResourceRequirements

// checkpoint is a file's content.
type checkpoint struct {
	Pods map[types.UID]podResources `json:"pods"`
}

// store is a checkpointed map of pods' resources; path "" keeps it in
// memory. The Manager's lock guards it.
type store struct {
	path string
	pods map[types.UID]podResources
}

// openStore reads path; a missing file is an empty store. A file that
// does not decode is an error naming it, and the store starts empty.
func openStore(path string) (*store, error) {
	s := &store{path: path, pods: map[types.UID]podResources{}}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("allocation: reading checkpoint %s: %w", path, err)
	}
	var c checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return s, fmt.Errorf("allocation: checkpoint %s does not decode, starting empty: %w", path, err)
	}
	if c.Pods != nil {
		s.pods = c.Pods
	}
	return s, nil
}

func (s *store) get(uid types.UID, container string) (v1.ResourceRequirements, bool) {
	r, ok := s.pods[uid][container]
	return r, ok
}

func (s *store) has(uid types.UID) bool { _, ok := s.pods[uid]; return ok }

func (s *store) setPod(uid types.UID, p podResources) error {
	s.pods[uid] = p
	return s.save()
}

func (s *store) setContainer(uid types.UID, container string, r v1.ResourceRequirements) error {
	p := s.pods[uid]
	if p == nil {
		p = podResources{}
		s.pods[uid] = p
	}
	p[container] = *r.DeepCopy()
	return s.save()
}

func (s *store) remove(keep func(types.UID) bool) error {
	changed := false
	for uid := range s.pods {
		if !keep(uid) {
			delete(s.pods, uid)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.save()
}

// save writes the file whole, through a temporary file renamed over it, so
// that a crash leaves the old checkpoint or the new one.
func (s *store) save() error {
	if s.path == "" {
		return nil
	}
	b, err := json.Marshal(checkpoint{Pods: s.pods})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("allocation: writing checkpoint: %w", err)
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("allocation: writing checkpoint %s: %w", s.path, err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("allocation: writing checkpoint %s: %w", s.path, err)
	}
	return nil
}
