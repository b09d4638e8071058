// Package csi is the node side of the Container Storage Interface, as the
// kubelet's CSI volume plugin: the registration of CSI drivers (Registry,
// the pluginmanager.Handler for registerapi.CSIPlugin) and a client of a
// driver's node service (Client).
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
//	info := nodeinfo.New(nodeinfo.Config{Client: clientset, NodeName: "node-1"})
//	drivers := csi.NewRegistry(csi.RegistryConfig{NodeInfo: info})
//	plugins, _ := pluginmanager.New(pluginmanager.Config{Dir: rootDir + "/plugins_registry",
//		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: drivers}})
//	c, _ := drivers.Client("hostpath.csi.k8s.io") // a registered driver's node service
package csi
