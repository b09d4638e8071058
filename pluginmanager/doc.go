// Package pluginmanager is the kubelet's plugin manager: node plugins (CSI
// drivers, device plugins, DRA drivers) register with a node agent by
// placing a gRPC socket in its plugin registry directory
// (<root-dir>/plugins_registry), and the manager asks each socket
// GetInfo (pluginregistration v1: its type, name, endpoint and supported
// versions), hands it to the Handler registered for its type (validate,
// then register), and tells the plugin with NotifyRegistrationStatus. A
// removed socket deregisters its plugin; a socket created again registers
// it again; a registration that fails is retried at the next reconcile
// (every second), as the kubelet's reconciler does.
//
//	m, _ := pluginmanager.New(pluginmanager.Config{Dir: "/var/lib/kubelet/plugins_registry",
//		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: csiHandler}})
//	go m.Run(ctx)
//	m.Registered() // the plugins registered now
//
// Files whose names start with "." and anything that is not a socket are
// ignored; subdirectories are watched too, as in the kubelet.
package pluginmanager
