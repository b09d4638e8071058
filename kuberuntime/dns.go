package kuberuntime

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DNSConfigurer returns the DNS settings for a pod's sandbox.
type DNSConfigurer func(pod *v1.Pod) (*runtimeapi.DNSConfig, error)

// HostDNS is the kubelet's DNS policy for a node with the given cluster DNS
// servers and domain (none in standalone mode): ClusterFirst pods get the
// cluster servers and search path when there are any and otherwise fall back,
// like Default pods, to the host's resolv.conf; None takes only the pod's
// dnsConfig; the pod's dnsConfig is merged last in every case.
func HostDNS(resolvConf string, clusterDNS []string, clusterDomain string) DNSConfigurer {
	return func(pod *v1.Pod) (*runtimeapi.DNSConfig, error) {
		policy := pod.Spec.DNSPolicy
		if policy == "" {
			policy = v1.DNSClusterFirst
		}
		if policy == v1.DNSClusterFirst && pod.Spec.HostNetwork {
			policy = v1.DNSDefault // only ClusterFirstWithHostNet uses cluster DNS on the host network
		}
		if (policy == v1.DNSClusterFirst || policy == v1.DNSClusterFirstWithHostNet) && len(clusterDNS) == 0 {
			policy = v1.DNSDefault
		}
		cfg := &runtimeapi.DNSConfig{}
		switch policy {
		case v1.DNSNone:
		case v1.DNSDefault:
			if resolvConf != "" {
				host, err := readResolvConf(resolvConf)
				if err != nil {
					return nil, err
				}
				cfg = host
			}
		default:
			cfg.Servers = append(cfg.Servers, clusterDNS...)
			ns := pod.Namespace
			cfg.Searches = []string{ns + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
			cfg.Options = []string{"ndots:5"}
		}
		if pc := pod.Spec.DNSConfig; pc != nil {
			cfg.Servers = append(cfg.Servers, pc.Nameservers...)
			cfg.Searches = append(cfg.Searches, pc.Searches...)
			for _, o := range pc.Options {
				if o.Value != nil {
					cfg.Options = append(cfg.Options, o.Name+":"+*o.Value)
				} else {
					cfg.Options = append(cfg.Options, o.Name)
				}
			}
		}
		return cfg, nil
	}
}

func readResolvConf(path string) (*runtimeapi.DNSConfig, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return &runtimeapi.DNSConfig{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resolv.conf: %w", err)
	}
	defer f.Close()
	cfg := &runtimeapi.DNSConfig{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], ";") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			cfg.Servers = append(cfg.Servers, fields[1])
		case "search", "domain":
			cfg.Searches = append(cfg.Searches[:0], fields[1:]...)
		case "options":
			cfg.Options = append(cfg.Options, fields[1:]...)
		}
	}
	return cfg, sc.Err()
}
