// Package csi is the node side of the Container Storage Interface, as the
// kubelet's CSI volume plugin: the registration of CSI drivers (Registry,
// the pluginmanager.Handler for registerapi.CSIPlugin) and a client of a
// driver's node service (Client).
//
// Volumes is the kubelet's CSI volume plugin for package volume: it waits
// for a volume's VolumeAttachment when the driver needs attaching, stages
// it once (NodeStageVolume under <root-dir>/plugins/kubernetes.io/csi/),
// publishes it for each pod (NodePublishVolume, filesystem or block),
// follows the driver's CSIDriver (fsGroupPolicy, podInfoOnMount, lifecycle
// modes), passes the PV's secrets, grows a published volume
// (NodeExpandVolume), measures it (NodeGetVolumeStats), serves pods'
// inline ephemeral volumes, and undoes all of it from the vol_data.json it
// leaves beside each target, after an agent restart too. Its deviations
// from the kubelet: a block volume is published on a file in the pod's
// volume directory rather than under plugins/kubernetes.io/csi/
// volumeDevices; a ReadWriteMany claim already at its new size is not
// expanded on further nodes; CSI volume health (alpha) and SELinux mount
// options are not done.
//
// A driver registers through the plugin registry (its node-driver-registrar
// sidecar puts a socket in <root-dir>/plugins_registry): Registry checks
// its versions (one of the 1.x family; a driver already registered must
// come back with a higher version), asks it NodeGetInfo and hands its node
// ID, volume limit and topology to a NodeInfo, which records them in the
// API as the kubelet's node info manager does (package csi/nodeinfo: the
// Node's csi.volume.kubernetes.io/nodeid annotation and topology labels,
// the CSINode object). A driver whose socket goes is uninstalled again.
//
//	info := nodeinfo.New(nodeinfo.Config{Client: client, NodeName: "node-1"}) // a kubeapi.Interface
//	drivers := csi.NewRegistry(csi.RegistryConfig{NodeInfo: info})
//	plugins, _ := pluginmanager.New(pluginmanager.Config{Dir: rootDir + "/plugins_registry",
//		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: drivers}})
//	c, _ := drivers.Client("hostpath.csi.k8s.io") // a registered driver's node service
package csi
