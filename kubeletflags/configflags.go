package kubeletflags

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// ConfigFlagValues returns the KubeletConfiguration fields set in kc that
// the kubelet also takes as flags, by flag name, in the flag's form (maps
// as JoinMap writes them, lists comma-separated), for ApplyConfigFlags.
// Unset fields (zero, nil) are left out, but for evictionHard, whose {} is
// a value (no hard thresholds), and imageGC*ThresholdPercent, whose 0 is.
// It covers the node's fields: static pods, the runtime, cgroups, periods,
// pods, the API client, reserved resources, image GC thresholds and
// eviction; serving's are server/serving.Settings'.
func ConfigFlagValues(kc *kubeletconfigv1beta1.KubeletConfiguration) map[string]string {
	v := map[string]string{}
	str := func(name, s string) {
		if s != "" {
			v[name] = s
		}
	}
	num := func(name string, n int64) {
		if n != 0 {
			v[name] = strconv.FormatInt(n, 10)
		}
	}
	dur := func(name string, d time.Duration) {
		if d != 0 {
			v[name] = d.String()
		}
	}
	for name, s := range map[string]string{"pod-manifest-path": kc.StaticPodPath, "manifest-url": kc.StaticPodURL,
		"container-runtime-endpoint": kc.ContainerRuntimeEndpoint, "image-service-endpoint": kc.ImageServiceEndpoint,
		"cgroup-driver": kc.CgroupDriver, "cgroup-root": kc.CgroupRoot, "cluster-domain": kc.ClusterDomain,
		"kube-reserved": JoinMap(kc.KubeReserved, "="), "system-reserved": JoinMap(kc.SystemReserved, "="),
		"eviction-soft": JoinMap(kc.EvictionSoft, "<"), "eviction-soft-grace-period": JoinMap(kc.EvictionSoftGracePeriod, "="),
		"eviction-minimum-reclaim": JoinMap(kc.EvictionMinimumReclaim, "="),
		"allowed-unsafe-sysctls":   strings.Join(kc.AllowedUnsafeSysctls, ","), "container-log-max-size": kc.ContainerLogMaxSize} {
		str(name, s)
	}
	for name, d := range map[string]time.Duration{"sync-frequency": kc.SyncFrequency.Duration,
		"file-check-frequency": kc.FileCheckFrequency.Duration, "node-status-update-frequency": kc.NodeStatusUpdateFrequency.Duration,
		"eviction-pressure-transition-period": kc.EvictionPressureTransitionPeriod.Duration} {
		dur(name, d)
	}
	configNumbers(kc, num)
	configPointers(kc, v)
	return v
}

func configNumbers(kc *kubeletconfigv1beta1.KubeletConfiguration, num func(string, int64)) {
	num("max-pods", int64(kc.MaxPods))
	num("node-lease-duration-seconds", int64(kc.NodeLeaseDurationSeconds))
	num("kube-api-burst", int64(kc.KubeAPIBurst))
	num("eviction-max-pod-grace-period", int64(kc.EvictionMaxPodGracePeriod))
	if kc.KubeAPIQPS != nil {
		num("kube-api-qps", int64(*kc.KubeAPIQPS))
	}
}

// configPointers adds the fields whose zero is a value: set means non-nil.
func configPointers(kc *kubeletconfigv1beta1.KubeletConfiguration, v map[string]string) {
	if kc.EvictionHard != nil {
		v["eviction-hard"] = JoinMap(kc.EvictionHard, "<")
	}
	for name, p := range map[string]*int32{"image-gc-high-threshold": kc.ImageGCHighThresholdPercent,
		"image-gc-low-threshold": kc.ImageGCLowThresholdPercent, "container-log-max-files": kc.ContainerLogMaxFiles} {
		if p != nil {
			v[name] = strconv.Itoa(int(*p))
		}
	}
	for name, p := range map[string]*bool{"cgroups-per-qos": kc.CgroupsPerQOS, "enable-debugging-handlers": kc.EnableDebuggingHandlers,
		"fail-cgroupv1": kc.FailCgroupV1, "enable-controller-attach-detach": kc.EnableControllerAttachDetach} {
		if p != nil {
			v[name] = strconv.FormatBool(*p)
		}
	}
}

// ApplyConfigFlags sets each flag of fs to its config file value in values
// (ConfigFlagValues) unless it was given on the command line (given:
// flags win, as in the kubelet). It sets them through their flag.Value, so
// fs.Visit still sees the command line's alone. Flags fs lacks, and those
// AcceptRest registered (not implemented: IgnoredConfigFields reports
// their fields), are left alone. A value a flag refuses is an error naming
// the flag.
func ApplyConfigFlags(fs *flag.FlagSet, values map[string]string, given map[string]bool) error {
	for name, v := range values {
		f := fs.Lookup(name)
		if f == nil || given[name] {
			continue
		}
		if _, accepted := f.Value.(*value); accepted {
			continue
		}
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("--config: --%s: invalid value %q: %w", name, v, err)
		}
	}
	return nil
}
