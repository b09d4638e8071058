package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// applyConfigFile reads a KubeletConfiguration (kubelet.config.k8s.io/v1beta1)
// and takes from it every setting whose flag was not given on the command
// line: flags win, as in the kubelet. Unknown fields are refused by name.
func applyConfigFile(fs *flag.FlagSet, cfg *config, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var kc kubeletconfig.KubeletConfiguration
	if err := yaml.UnmarshalStrict(data, &kc); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	if kc.Kind != "KubeletConfiguration" || kc.APIVersion != kubeletconfig.SchemeGroupVersion.String() {
		return fmt.Errorf("--config %s: apiVersion/kind: Unsupported value: %q/%q: want %s/KubeletConfiguration",
			path, kc.APIVersion, kc.Kind, kubeletconfig.SchemeGroupVersion)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	str := func(flagName string, dst *string, v string) {
		if !set[flagName] && v != "" {
			*dst = v
		}
	}
	dur := func(flagName string, dst *time.Duration, v time.Duration) {
		if !set[flagName] && v != 0 {
			*dst = v
		}
	}
	integer := func(flagName string, dst *int, v *int32) {
		if !set[flagName] && v != nil {
			*dst = int(*v)
		}
	}
	str("pod-manifest-path", &cfg.manifestPath, kc.StaticPodPath)
	str("manifest-url", &cfg.manifestURL, kc.StaticPodURL)
	str("container-runtime-endpoint", &cfg.endpoint, kc.ContainerRuntimeEndpoint)
	str("cgroup-driver", &cfg.cgroupDriver, kc.CgroupDriver)
	str("cgroup-root", &cfg.cgroupRoot, kc.CgroupRoot)
	dur("sync-frequency", &cfg.syncFrequency, kc.SyncFrequency.Duration)
	dur("file-check-frequency", &cfg.fileCheckFreq, kc.FileCheckFrequency.Duration)
	integer("healthz-port", &cfg.healthzPort, kc.HealthzPort)
	if kc.Port != 0 {
		integer("port", &cfg.port, &kc.Port)
	}
	if kc.MaxPods != 0 {
		integer("max-pods", &cfg.maxPods, &kc.MaxPods)
	}
	if !set["cgroups-per-qos"] && kc.CgroupsPerQOS != nil {
		cfg.cgroupsPerQOS = *kc.CgroupsPerQOS
	}
	if !set["enable-debugging-handlers"] && kc.EnableDebuggingHandlers != nil {
		cfg.debugHandlers = *kc.EnableDebuggingHandlers
	}
	str("image-service-endpoint", &cfg.imageEndpoint, kc.ImageServiceEndpoint)
	return nil
}
