package main

import (
	"cmp"
	"flag"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kubeletflags"
	nodeserving "github.com/nodekit-dev/nodekit/server/serving"
)

// applyConfigFile reads --config and --config-dir (kubeletflags.LoadConfig:
// lenient decoding of the file, drop-ins merged over it) and takes from
// them every setting whose flag was not given on the command line: flags
// win, as in the kubelet.
func applyConfigFile(fs *flag.FlagSet, cfg *config, sf *nodeserving.Flags, path, dropInDir string) error {
	loaded, err := kubeletflags.LoadConfig(path, dropInDir)
	if err != nil {
		return err
	}
	cfg.loaded = loaded
	kc := *loaded.Config
	cfg.ignoredFields = kubeletflags.IgnoredConfigFields(&kc, implementedFields)
	set := kubeletflags.Given(fs)
	if err := kubeletflags.ApplyConfigFlags(fs, kubeletflags.ConfigFlagValues(&kc), set); err != nil {
		return err
	}
	if !set["register-with-taints"] && len(kc.RegisterWithTaints) > 0 {
		cfg.taints = kc.RegisterWithTaints
	}
	kubeletflags.Take(set, "pod-logs-dir", &cfg.podLogsDir, kc.PodLogsDir)
	sf.ApplyConfig(&kc)
	// The config file's fields that have no flag.
	cfg.gc.images.MinAge = cmp.Or(kc.ImageMinimumGCAge.Duration, cfg.gc.images.MinAge)
	cfg.gc.images.MaxAge = cmp.Or(kc.ImageMaximumGCAge.Duration, cfg.gc.images.MaxAge)
	cfg.eviction.flags.MergeDefaults = ptr.Deref(kc.MergeDefaultEvictionSettings, cfg.eviction.flags.MergeDefaults)
	cfg.eviction.localStorage = kc.LocalStorageCapacityIsolation
	cfg.singleProcessOOMKill = ptr.Deref(kc.SingleProcessOOMKill, cfg.singleProcessOOMKill)
	cfg.containerLogs.MaxWorkers, cfg.containerLogs.MonitorInterval = int(ptr.Deref(kc.ContainerLogMaxWorkers, 0)),
		ptr.Deref(kc.ContainerLogMonitorInterval, metav1.Duration{}).Duration
	if kc.UserNamespaces != nil {
		cfg.usernsIDsPerPod = ptr.Deref(kc.UserNamespaces.IDsPerPod, 0)
	}
	return nil
}

// implementedFields are the KubeletConfiguration fields the agent acts on
// (applyConfigFile: through the flags, the serving flags' ApplyConfig, or
// directly); the rest are logged once.
var implementedFields = []string{"staticPodPath", "staticPodURL", "containerRuntimeEndpoint", "imageServiceEndpoint",
	"cgroupDriver", "cgroupRoot", "cgroupsPerQOS", "syncFrequency", "fileCheckFrequency", "port", "healthzPort",
	"healthzBindAddress", "address", "readOnlyPort", "maxPods", "nodeStatusUpdateFrequency", "nodeLeaseDurationSeconds",
	"kubeAPIQPS", "kubeAPIBurst", "kubeReserved", "systemReserved", "evictionHard", "registerWithTaints",
	"enableDebuggingHandlers", "podLogsDir", "tlsCertFile", "tlsPrivateKeyFile", "tlsMinVersion", "tlsCipherSuites",
	"authentication", "authorization", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "imageMinimumGCAge",
	"imageMaximumGCAge", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim", "evictionMaxPodGracePeriod",
	"evictionPressureTransitionPeriod", "mergeDefaultEvictionSettings", "localStorageCapacityIsolation", "singleProcessOOMKill",
	"allowedUnsafeSysctls", "clusterDomain", "failCgroupV1", "userNamespaces",
	"enableControllerAttachDetach", "containerLogMaxSize", "containerLogMaxFiles", "containerLogMaxWorkers", "containerLogMonitorInterval"}
