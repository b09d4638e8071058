// Package nodekit is an embeddable library of kubelet building blocks: the
// kubelet's machinery as small, independent packages a custom node agent can
// import, or use as fakes to unit-test a controller. The package Example puts
// a pod on a CRI runtime in a few lines.
//
// The packages in five layers, from the vocabulary they all speak to their
// composition, and within a layer in the order of deps_test.go (which pins
// what each may import):
//
//	vocabulary: the types and formulas every other package speaks
//	  kubecontainer        Pod, PodStatus, container events, the kubelet's labels, the hash
//	  resources            QoS class, CPU shares/quota, memory limit, OOM score: the kubelet's formulas
//	  fieldpath            the downward API: pod fields, container resources, $(VAR) expansion
//	  podpath              every path built from pod data, kept below its base directory
//	node parts: the runtime, cgroups, volumes and disk under the pods
//	  volume               emptyDir, hostPath, configMap, secret, downwardAPI, projected, image, PVCs, CSI inline, as mounts
//	  cgroupmgr            the QoS and pod cgroup tree, cgroupfs or systemd, v1 or v2
//	  userns               the pods' user namespaces (hostUsers: false): ID ranges kept per pod
//	  runtime              CRI client: RuntimeService and ImageService over gRPC or in process
//	  runtime/criconv      CRI to kubecontainer conversions, shared by runtime, kuberuntime and gc
//	  credentials          image pull secrets to registry credentials, the kubelet's keyring
//	  containerlog         container log rotation (size, files kept, gzip) and /var/log/containers links
//	  kuberuntime          pod-level runtime manager: SyncPod, KillPod, GetPodStatus on the CRI
//	  runtime/fake         in-memory CRI runtime served over real gRPC, for tests
//	  runtime/runtimetest  CRI contract suite (the fake and containerd pass it)
//	  volume/apiclient     volume's ConfigMaps, Secrets and service account tokens over client-go
//	  pluginmanager        plugin registration in <root-dir>/plugins_registry, per-type handlers
//	  csi                  CSI drivers' node side: registration, attach wait, stage, publish, expand, stats
//	  csi/nodeinfo         the Node's CSI annotation and labels, the CSINode object
//	  csi/apiclient        csi's CSIDrivers, VolumeAttachments and secrets over client-go
//	  csi/csitest          a fake CSI driver (identity, node and controller services) for tests
//	  allocation           in-place pod resize: allocated and actuated resources, resize decisions
//	  gc                   container and image garbage collection with the kubelet's policies
//	  eviction             eviction manager: thresholds, pressure conditions, evictions
//	  oomwatch             OOM kills from the kernel log: the SystemOOM event, kills per cgroup
//	pod lifecycle: from a pod's sources to its status
//	  statuscache          pod status cache; GetNewerThan orders each sync after the last
//	  pleg                 pod lifecycle event generator, relisting or evented
//	  podstatus            the API pod status (phase, conditions, reasons); status manager
//	  podworkers           one worker per pod: ordering, back-off, resync, termination
//	  prober/probe         single HTTP, TCP, gRPC and exec probes, cheap enough for 10,000/s
//	  pleg/plegmetrics     the PLEG's kubelet_pleg_* metrics for Prometheus
//	  prober               liveness, readiness and startup probes on one scheduler
//	  podsource            static files, manifest URL, HTTP push; merged by a mux
//	  podsource/apiserver  the API server's pods for the node, as a pod source
//	  podstatus/apiclient  podstatus's API writer over client-go
//	  podsync              the workers' PodSyncer: sync, terminate, housekeeping; Dispatcher
//	  podstartup           the pod startup SLI, as the kubelet's startup latency tracker
//	  admission            admit handlers (Handler, Result); the kubelet's predicates
//	node surface: what the node shows the cluster and its operator
//	  cadvisor             cAdvisor's container metrics (/metrics/cadvisor) from the cgroup files
//	  server               the kubelet's HTTP API: pods, healthz, metrics, stats, logs, exec
//	  server/serverauth    TLS, authentication and authorization as the kubelet's port 10250
//	  server/serverauth/serverauthtest  a client CA and certificate for tests
//	  server/serving       the kubelet's listeners: API over TLS, read-only port, healthz
//	  nodestatus           Node registration, status and conditions, the Lease
//	  mirrorpod            mirror pods in the API for static pods
//	  events               the kubelet's event recorder: correlation, spam filter, retries
//	  kubeletflags         the kubelet v1.37 command line on a standard flag.FlagSet
//	composition: the packages put together
//	  nodeagent            the packages composed as the kubelet composes them: one node agent
//	  hollow               hollow nodes: many nodeagents in one process, each on runtime/fake
//
// Beside them: examples/kubelet (the reference agent: nodeagent behind the
// kubelet's flags), examples/hollownodes (hollow nodes from the command
// line), examples/fakeruntime (runtime/fake on a socket, for crictl), e2e
// (the reference agent tested as a process), and internal/ (fsstats,
// nodekit's one statfs reader; smpdiff, the status patches' strategic
// merge diff; and test helpers).
package nodekit
