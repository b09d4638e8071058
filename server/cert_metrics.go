package server

import (
	"crypto/x509"
	"encoding/pem"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ClientCertificateTTL is the kubelet's
// kubelet_certificate_manager_client_ttl_seconds over the certificate cert
// returns at each scrape (nil: none). The kubelet has it only with client
// certificate rotation; a static certificate's expiry is as worth an
// alert (the kubernetes-mixin's KubeletClientCertificateExpiration).
func ClientCertificateTTL(cert func() *x509.Certificate) prometheus.Collector {
	return certificateTTL("certificate_manager_client_ttl_seconds", "Gauge of the TTL (time-to-live) of the Kubelet's client certificate. "+
		"The value is in seconds until certificate expiry (negative if already expired). "+
		"If client certificate is invalid or unused, the value will be +INF.", cert)
}

// ServingCertificateTTL is the kubelet's
// kubelet_certificate_manager_server_ttl_seconds over the serving
// certificate cert returns at each scrape (nil: none); as
// ClientCertificateTTL, also for a static certificate.
func ServingCertificateTTL(cert func() *x509.Certificate) prometheus.Collector {
	return certificateTTL("certificate_manager_server_ttl_seconds", "Gauge of the shortest TTL (time-to-live) of "+
		"the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). "+
		"If serving certificate is invalid or unused, the value will be +INF.", cert)
}

func certificateTTL(name, help string, cert func() *x509.Certificate) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Subsystem: "kubelet", Name: name, Help: help}, func() float64 {
		if c := cert(); c != nil {
			return math.Trunc(time.Until(c.NotAfter).Seconds())
		}
		return math.Inf(1)
	})
}

// ParsePEMCertificate is the first certificate of PEM data; nil when it
// has none that parses.
func ParsePEMCertificate(data []byte) *x509.Certificate {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	return cert
}
