// Package volume sets up a pod's volumes on the node and hands the runtime
// manager their mounts, as the kubelet's volume manager does for the
// volumes a node can serve by itself:
//
//   - emptyDir: a directory <root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>,
//     or, with medium Memory, a tmpfs mounted there (sizeLimit as its size);
//   - hostPath: the node's path, with the API's type checks (Directory,
//     DirectoryOrCreate, File, FileOrCreate, Socket, CharDevice,
//     BlockDevice; the *OrCreate types create what is missing).
//
// Other volume types are refused by name; each is a Plugin, so configMap,
// secret, projected and downwardAPI slot in as further Plugins in Config.
//
// Every path built from pod data goes through package podpath: a UID,
// volume name or subPath that would lead out of the pod's directory (or,
// for a subPath, out of its volume) is an error naming the field, and
// directories are created and removed through os.Root, so a symlink a
// container left in its volume cannot lead a later subPath, or the pod's
// tear-down, outside.
//
// Manager.Mounts is a runtime.MountProvider: it sets up (idempotently) the
// volumes a container mounts and returns them as kubecontainer.Mounts,
// which the runtime manager turns into CRI mounts. TearDown unmounts
// memory-backed emptyDirs and removes the pod's directory; call it once
// the pod's containers are gone.
//
// # Use
//
//	vols, err := volume.New(volume.Config{Layout: podpath.Layout{RootDir: "/var/lib/kubelet"}})
//	mgr, _ := runtime.NewManager(runtime.ManagerConfig{Runtime: client, Images: client, Mounts: vols.Mounts})
//	// ... after the pod was killed and removed:
//	if err := vols.TearDown(pod); err != nil { ... }
package volume
