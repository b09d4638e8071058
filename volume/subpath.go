package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/fieldpath"
	"github.com/nodekit-dev/nodekit/podpath"
)

// subPath is vm's subPath, or its subPathExpr expanded with env as the
// kubelet's ExpandContainerVolumeMounts does (a variable unset or empty is
// an error), and the field it came from; either must stay inside the
// volume (the kubelet's makeMounts).
func subPath(vm v1.VolumeMount, env map[string]string) (string, string, error) {
	if vm.SubPathExpr == "" {
		if !inside(vm.SubPath) {
			return "", "subPath", fmt.Errorf("Invalid value: %q: must be a relative path without '..'", vm.SubPath)
		}
		return vm.SubPath, "subPath", nil
	}
	var missing []string
	sub := fieldpath.Expand(vm.SubPathExpr, func(name string) string {
		if env[name] == "" && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return env[name]
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", "subPathExpr", fmt.Errorf("Invalid value: %q: missing value for %s", vm.SubPathExpr, strings.Join(missing, ", "))
	}
	if !inside(sub) {
		return "", "subPathExpr", fmt.Errorf("Invalid value: %q: expands to %q: must be a relative path without '..'", vm.SubPathExpr, sub)
	}
	return sub, "subPathExpr", nil
}

func inside(sub string) bool {
	return !filepath.IsAbs(sub) && !slices.Contains(strings.Split(sub, "/"), "..")
}

// mkdirSubPath creates what is missing of sub below the volume vol with
// vol's mode, chmodded past the umask (the kubelet's SafeMakeDir: with an
// fsGroup, setgid and group rwx), through os.Root, so that a symlink a
// container left in its volume cannot lead outside. What exists (a
// configMap's key, a directory) is mounted as it is.
func mkdirSubPath(vol, sub string) (string, error) {
	p, err := podpath.JoinLocal(vol, sub)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(vol)
	if err != nil {
		return "", err
	}
	perm := info.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSetuid | os.ModeSticky)
	root, err := os.OpenRoot(vol)
	if err != nil {
		return "", err
	}
	defer root.Close()
	elems := strings.Split(filepath.Clean(sub), "/")
	for i := range elems {
		rel := filepath.Join(elems[:i+1]...)
		if _, err := root.Stat(rel); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if err := root.Mkdir(rel, perm.Perm()); err != nil {
			return "", err
		}
		if err := root.Chmod(rel, perm); err != nil {
			return "", err
		}
	}
	return p, nil
}

// staticEnv is what Mounts knows of c's environment without the runtime:
// env values (expanded with the variables before them) and pod fieldRefs.
// A variable it cannot know (envFrom, configMap, secret and resource refs,
// status fields, a value referring to one of those) is left out, so a
// subPathExpr using it fails rather than expanding to something else.
func staticEnv(pod *v1.Pod, c *v1.Container) map[string]string {
	vars := map[string]string{}
	for _, e := range c.Env {
		var v string
		known := false
		switch {
		case e.ValueFrom == nil:
			known = true
			v = fieldpath.Expand(e.Value, func(name string) string {
				val, ok := vars[name]
				known = known && ok
				return val
			})
		case e.ValueFrom.FieldRef != nil:
			var err error
			v, err = fieldpath.PodField(pod, e.ValueFrom.FieldRef.FieldPath)
			known = err == nil
		}
		if known {
			vars[e.Name] = v
		} else {
			delete(vars, e.Name)
		}
	}
	return vars
}
