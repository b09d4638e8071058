// Package volume sets up a pod's volumes on the node and hands the runtime
// manager their mounts, as the kubelet's volume manager does for the
// volumes a node can serve by itself: emptyDir (disk or tmpfs), hostPath,
// configMap, secret, downwardAPI, projected (with service account tokens),
// image (the runtime mounts the image; nothing on the node),
// persistentVolumeClaim bound to a local, hostPath or CSI persistent
// volume (PersistentVolumeClaim: filesystem or block, grown online) and
// csi inline ephemeral volumes (CSIInline), CSI through package csi, each
// a Plugin (Manager lists what each does). API-backed volumes are written
// atomically and again on every sync, so updated ConfigMaps, Secrets,
// labels and tokens reach running pods; secrets live on tmpfs.
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
// fieldRefs). TearDown unmounts the tmpfs and bind mounts and removes the
// pod's directory, from the UID alone, and refuses while anything is still
// mounted below it; call it once the containers are gone.
// A claim of volumeMode Block is a device that ContainerMounts hands out
// for the container's volumeDevices (Mount.Device). PodVolumeStats
// measures a pod's volumes for the Summary API (a
// server.VolumeStatsProvider), claims with their PVCRef.
//
//	vols, err := volume.New(volume.Config{Layout: podpath.Layout{RootDir: "/var/lib/kubelet"}})
//	// or, with an API server (objs from volume/apiclient):
//	tokens, _ := volume.NewTokens(objs, nil)
//	vols, err = volume.New(volume.Config{Layout: layout, Plugins: []volume.Plugin{volume.EmptyDir{}, volume.HostPath{},
//		volume.ConfigMap{Objects: objs}, volume.Secret{Objects: objs}, volume.DownwardAPI{},
//		volume.Projected{Objects: objs, Tokens: tokens}, volume.Image{}}})
//	mgr, _ := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Mounts: vols.Mounts})
//	// ... after the pod was killed and removed:
//	if err := vols.TearDown(pod); err != nil { ... }
package volume
