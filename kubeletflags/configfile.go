package kubeletflags

import (
	"flag"
	"path/filepath"
	"sort"
	"strings"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// ResolveRelativePaths makes kc's relative paths in staticPodPath,
// authentication.x509.clientCAFile, tlsCertFile, tlsPrivateKeyFile and
// podLogsDir relative to dir, the --config file's directory, as the kubelet
// does.
func ResolveRelativePaths(kc *kubeletconfigv1beta1.KubeletConfiguration, dir string) {
	for _, p := range []*string{&kc.StaticPodPath, &kc.Authentication.X509.ClientCAFile, &kc.TLSCertFile,
		&kc.TLSPrivateKeyFile, &kc.PodLogsDir} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// Given returns the names of the flags set on fs's command line, for Take.
func Given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// Take sets *dst to a config file's v unless the flag flagName was given
// (flags win over --config, as in the kubelet) or v is unset (zero).
func Take[T comparable](given map[string]bool, flagName string, dst *T, v T) {
	var zero T
	if !given[flagName] && v != zero {
		*dst = v
	}
}

// JoinMap writes a KubeletConfiguration map (kubeReserved, evictionHard)
// in its flag's form: "k<sep>v,..." sorted ("memory.available<100Mi").
func JoinMap(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+sep+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
