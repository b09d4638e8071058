// Package volume sets up a pod's volumes on the node and hands the runtime
// manager their mounts, as the kubelet's volume manager does for the
// volumes a node can serve by itself:
//
//   - emptyDir: a directory <root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>
//     made 0777 past the umask, or, with medium Memory, a tmpfs there;
//     set up once (marked ready in <root-dir>/pods/<uid>/plugins);
//   - hostPath: the node's path, with the API's type checks (the *OrCreate
//     types create what is missing);
//   - configMap and secret (items, defaultMode, optional) from the API
//     server through Objects (package volume/apiclient over client-go);
//   - downwardAPI: pod fields and container resources (package fieldpath);
//   - projected: configMap, secret, downwardAPI and serviceAccountToken
//     sources in one directory; tokens come from TokenRequests bound to
//     the pod, cached and refreshed by Tokens as the kubelet's token
//     manager does (at 80% of their lifetime, at most 24 h).
//
// The API-backed and downward volumes are written atomically (a ..data
// symlink swapped to a new directory, as the kubelet's AtomicWriter) and
// again on every SetUp; SetUpAll on each pod sync is how an updated
// ConfigMap, Secret, label or token reaches a running pod. Secret and
// projected volumes live on a tmpfs, sized as the kubelet sizes a memory
// emptyDir (node allocatable, pod memory limit, sizeLimit), so secrets
// never touch the disk; these four types are mounted read-only. Other
// volume types are refused by name; each is a Plugin in Config.
//
// With a pod fsGroup, SetVolumeOwnership gives each volume but hostPath
// to the group as the kubelet does (chown, setgid directories, group rw,
// or r for the read-only types; a token file 0600 before that).
//
// Every path built from pod data goes through package podpath: a UID,
// volume name or subPath that would lead out of the pod's directory (or,
// for a subPath, out of its volume) is an error naming the field, and
// directories are created and removed through os.Root, so a symlink a
// container left in its volume cannot lead a later subPath, the ownership
// walk or the pod's tear-down outside.
//
// Manager.Mounts is a kuberuntime.MountProvider: it sets up (idempotently) the
// volumes a container mounts and returns them as kubecontainer.Mounts.
// ContainerMounts also takes the container's resolved environment, which
// a subPathExpr expands with (Mounts knows only env values and pod
// fieldRefs). TearDown unmounts the tmpfs mounts and removes the pod's
// directory, from the UID alone; call it once the containers are gone.
//
// PodVolumeStats measures a pod's volumes for the Summary API's VolumeStats
// as the kubelet does (a du-style walk and statfs of each emptyDir,
// configMap, secret, downwardAPI and projected volume's directory); it is a
// server.VolumeStatsProvider.
//
// # Use
//
//	vols, err := volume.New(volume.Config{Layout: podpath.Layout{RootDir: "/var/lib/kubelet"}})
//	// or, with an API server (objs from volume/apiclient):
//	tokens, _ := volume.NewTokens(objs, nil)
//	vols, err = volume.New(volume.Config{Layout: layout, Plugins: []volume.Plugin{volume.EmptyDir{}, volume.HostPath{},
//		volume.ConfigMap{Objects: objs}, volume.Secret{Objects: objs}, volume.DownwardAPI{},
//		volume.Projected{Objects: objs, Tokens: tokens}}})
//	mgr, _ := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Mounts: vols.Mounts})
//	// ... after the pod was killed and removed:
//	if err := vols.TearDown(pod); err != nil { ... }
package volume
