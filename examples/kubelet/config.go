package main

import (
	"cmp"
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
	"allowedUnsafeSysctls", "clusterDomain"}
