// Package podpath builds the file paths a node agent derives from pod data —
// pod directories, volume directories, log directories, container log
// files, and any file named after a pod in future (checkpoints) — so that no
// pod field can make a path leave its base directory.
//
// A pod's UID, name, namespace, container and volume names come from
// manifests that a node agent does not fully trust (a static-pod directory,
// a manifest URL, an HTTP push). Joined into a path unchecked, a UID of
// "../../victim" puts a pod directory outside --root-dir, and tearing it
// down deletes whatever is there. Every such path in nodekit is built here:
//
//   - Join(base, elems...) takes single path elements: each must be
//     non-empty, not "." or "..", without "/" or NUL, and at most 255
//     bytes (a file name's limit on Linux file systems).
//   - JoinLocal(base, rel) takes a relative path of several elements (a
//     volume mount's subPath): filepath.IsLocal, so it cannot climb out.
//   - Layout is the kubelet's directory layout on top of them:
//     <root-dir>/pods/<uid>, .../volumes/<plugin>/<volume>,
//     .../containers/<container>, and <pod-logs-dir>/<namespace>_<name>_<uid>
//     with <container>/<restart>.log inside (ContainerLogPath), each error naming the pod
//     field at fault.
//   - MkdirAllIn and RemoveAllIn create and remove below a base through
//     os.Root, so a symlink planted below the base (by a container, in a
//     volume it writes to) cannot redirect them outside it either.
//   - ValidateUID is the rule a pod source applies to metadata.uid: 1 to 128
//     characters, ASCII letters, digits and '-', starting and ending with a
//     letter or digit. UUIDs (the API server's UIDs) and hex digests (the
//     kubelet's static pod UIDs) fit; '_' does not, because it separates the
//     parts of a log directory name and is refused in cgroup names.
//
// Lexical checks cannot see a symlink swapped in after the check and before
// a runtime follows the path (the kubelet's subPath fix bind-mounts an
// opened file descriptor for that); what package podpath guarantees is that
// pod data alone never names a path outside its base.
//
// # Use
//
//	layout := podpath.Layout{RootDir: "/var/lib/kubelet", PodLogsDir: "/var/log/pods"}
//	dir, err := layout.PodVolumeDir(pod.UID, "kubernetes.io~empty-dir", vol.Name)
//	if err != nil {
//		return err // e.g. metadata.uid: Invalid value: "../x": must be a single path element ...
//	}
//	// Tear the pod down: the UID must be valid, and nothing is followed out of <root>/pods.
//	if podpath.ValidateUID(string(pod.UID)) == nil {
//		err = podpath.RemoveAllIn(layout.PodsDir(), string(pod.UID))
//	}
package podpath
