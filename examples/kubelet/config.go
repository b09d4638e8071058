package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
	// Relative paths are the config file's, as in the kubelet.
	for _, p := range []*string{&kc.StaticPodPath, &kc.Authentication.X509.ClientCAFile, &kc.TLSCertFile,
		&kc.TLSPrivateKeyFile, &kc.PodLogsDir} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(filepath.Dir(path), *p)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	take(set, "pod-manifest-path", &cfg.manifestPath, kc.StaticPodPath)
	take(set, "manifest-url", &cfg.manifestURL, kc.StaticPodURL)
	take(set, "container-runtime-endpoint", &cfg.endpoint, kc.ContainerRuntimeEndpoint)
	take(set, "image-service-endpoint", &cfg.imageEndpoint, kc.ImageServiceEndpoint)
	take(set, "cgroup-driver", &cfg.cgroupDriver, kc.CgroupDriver)
	take(set, "cgroup-root", &cfg.cgroupRoot, kc.CgroupRoot)
	take(set, "sync-frequency", &cfg.syncFrequency, kc.SyncFrequency.Duration)
	take(set, "file-check-frequency", &cfg.fileCheckFreq, kc.FileCheckFrequency.Duration)
	take(set, "max-pods", &cfg.maxPods, int(kc.MaxPods))
	take(set, "cluster-domain", &cfg.clusterDomain, kc.ClusterDomain)
	take(set, "node-status-update-frequency", &cfg.nodeStatusFreq, kc.NodeStatusUpdateFrequency.Duration)
	take(set, "node-lease-duration-seconds", &cfg.leaseSeconds, int(kc.NodeLeaseDurationSeconds))
	take(set, "kube-api-qps", &cfg.apiQPS, int(ptr.Deref(kc.KubeAPIQPS, 0)))
	take(set, "kube-api-burst", &cfg.apiBurst, int(kc.KubeAPIBurst))
	take(set, "kube-reserved", &cfg.kubeReserved, joinMap(kc.KubeReserved, "="))
	take(set, "system-reserved", &cfg.systemReserved, joinMap(kc.SystemReserved, "="))
	if !set["register-with-taints"] && len(kc.RegisterWithTaints) > 0 {
		cfg.taints = kc.RegisterWithTaints
	}
	take(set, "pod-logs-dir", &cfg.podLogsDir, kc.PodLogsDir)
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

// take sets *dst to v unless the flag was given or v is unset (zero).
func take[T comparable](set map[string]bool, flagName string, dst *T, v T) {
	var zero T
	if !set[flagName] && v != zero {
		*dst = v
	}
}

// joinMap writes a KubeletConfiguration map in its flag's form.
func joinMap(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+sep+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
