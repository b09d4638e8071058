package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekit-dev/nodekit/kubeletflags"
	nodeserving "github.com/nodekit-dev/nodekit/server/serving"
)

// applyConfigFile reads a KubeletConfiguration (kubelet.config.k8s.io/v1beta1)
// and takes from it every setting whose flag was not given on the command
// line: flags win, as in the kubelet. As the kubelet's
// DecodeKubeletConfiguration, a file with unknown or duplicate fields is
// decoded leniently, with the strict error logged (cfg.lenientConfig).
func applyConfigFile(fs *flag.FlagSet, cfg *config, sf *nodeserving.Flags, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var kc kubeletconfig.KubeletConfiguration
	if strictErr := yaml.UnmarshalStrict(data, &kc); strictErr != nil {
		kc = kubeletconfig.KubeletConfiguration{}
		if err := yaml.Unmarshal(data, &kc); err != nil {
			return fmt.Errorf("--config %s: %w", path, strictErr)
		}
		cfg.lenientConfig = strictErr
	}
	if kc.Kind != "KubeletConfiguration" || kc.APIVersion != kubeletconfig.SchemeGroupVersion.String() {
		return fmt.Errorf("--config %s: apiVersion/kind: Unsupported value: %q/%q: want %s/KubeletConfiguration",
			path, kc.APIVersion, kc.Kind, kubeletconfig.SchemeGroupVersion)
	}
	cfg.ignoredFields = kubeletflags.IgnoredConfigFields(&kc, implementedFields)
	kubeletflags.ResolveRelativePaths(&kc, filepath.Dir(path))
	set := kubeletflags.Given(fs)
	kubeletflags.Take(set, "pod-manifest-path", &cfg.manifestPath, kc.StaticPodPath)
	kubeletflags.Take(set, "manifest-url", &cfg.manifestURL, kc.StaticPodURL)
	kubeletflags.Take(set, "container-runtime-endpoint", &cfg.endpoint, kc.ContainerRuntimeEndpoint)
	kubeletflags.Take(set, "image-service-endpoint", &cfg.imageEndpoint, kc.ImageServiceEndpoint)
	kubeletflags.Take(set, "cgroup-driver", &cfg.cgroupDriver, kc.CgroupDriver)
	kubeletflags.Take(set, "cgroup-root", &cfg.cgroupRoot, kc.CgroupRoot)
	kubeletflags.Take(set, "sync-frequency", &cfg.syncFrequency, kc.SyncFrequency.Duration)
	kubeletflags.Take(set, "file-check-frequency", &cfg.fileCheckFreq, kc.FileCheckFrequency.Duration)
	kubeletflags.Take(set, "max-pods", &cfg.maxPods, int(kc.MaxPods))
	kubeletflags.Take(set, "cluster-domain", &cfg.clusterDomain, kc.ClusterDomain)
	kubeletflags.Take(set, "node-status-update-frequency", &cfg.nodeStatusFreq, kc.NodeStatusUpdateFrequency.Duration)
	kubeletflags.Take(set, "node-lease-duration-seconds", &cfg.leaseSeconds, int(kc.NodeLeaseDurationSeconds))
	kubeletflags.Take(set, "kube-api-qps", &cfg.apiQPS, int(ptr.Deref(kc.KubeAPIQPS, 0)))
	kubeletflags.Take(set, "kube-api-burst", &cfg.apiBurst, int(kc.KubeAPIBurst))
	kubeletflags.Take(set, "kube-reserved", &cfg.kubeReserved, kubeletflags.JoinMap(kc.KubeReserved, "="))
	kubeletflags.Take(set, "system-reserved", &cfg.systemReserved, kubeletflags.JoinMap(kc.SystemReserved, "="))
	if !set["register-with-taints"] && len(kc.RegisterWithTaints) > 0 {
		cfg.taints = kc.RegisterWithTaints
	}
	kubeletflags.Take(set, "pod-logs-dir", &cfg.podLogsDir, kc.PodLogsDir)
	sf.ApplyConfig(&kc)
	applyGCConfig(set, &cfg.gc, &kc)
	applyEvictionConfig(set, &cfg.eviction, &kc)
	for name, b := range map[string]struct{ dst, v *bool }{"cgroups-per-qos": {&cfg.cgroupsPerQOS, kc.CgroupsPerQOS},
		"enable-debugging-handlers": {&cfg.debugHandlers, kc.EnableDebuggingHandlers}} {
		if !set[name] && b.v != nil {
			*b.dst = *b.v
		}
	}
	if !set["allowed-unsafe-sysctls"] && len(kc.AllowedUnsafeSysctls) > 0 {
		cfg.allowedUnsafeSysctls = kc.AllowedUnsafeSysctls
	}
	if kc.SingleProcessOOMKill != nil {
		cfg.singleProcessOOMKill = *kc.SingleProcessOOMKill
	}
	return nil
}

// implementedFields are the KubeletConfiguration fields the agent acts on
// (applyConfigFile and the serving flags' ApplyConfig); the rest are logged once.
var implementedFields = []string{"staticPodPath", "staticPodURL", "containerRuntimeEndpoint", "imageServiceEndpoint",
	"cgroupDriver", "cgroupRoot", "cgroupsPerQOS", "syncFrequency", "fileCheckFrequency", "port", "healthzPort",
	"healthzBindAddress", "address", "readOnlyPort", "maxPods", "nodeStatusUpdateFrequency", "nodeLeaseDurationSeconds",
	"kubeAPIQPS", "kubeAPIBurst", "kubeReserved", "systemReserved", "evictionHard", "registerWithTaints",
	"enableDebuggingHandlers", "podLogsDir", "tlsCertFile", "tlsPrivateKeyFile", "tlsMinVersion", "tlsCipherSuites",
	"authentication", "authorization", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "imageMinimumGCAge",
	"imageMaximumGCAge", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim", "evictionMaxPodGracePeriod",
	"evictionPressureTransitionPeriod", "mergeDefaultEvictionSettings", "localStorageCapacityIsolation", "singleProcessOOMKill",
	"allowedUnsafeSysctls", "clusterDomain"}
