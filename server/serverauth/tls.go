package serverauth

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// TLSOptions are the kubelet's serving flags.
type TLSOptions struct {
	// CertFile and KeyFile (--tls-cert-file, --tls-private-key-file) are
	// the serving certificate; when both are empty, a self-signed pair
	// kubelet.crt/kubelet.key in CertDir is used, made on first start.
	CertFile, KeyFile string
	// CertDir (--cert-dir, the kubelet's default <root-dir>/pki).
	CertDir string
	// Hostname and IPs are the self-signed certificate's names.
	Hostname string
	IPs      []net.IP
	// MinVersion (--tls-min-version, e.g. "VersionTLS12"; default Go's)
	// and CipherSuites (--tls-cipher-suites, Go's names; default Go's).
	MinVersion   string
	CipherSuites []string
}

// TLSConfig is the serving config: the certificate, the version and
// cipher limits, and client certificates requested (not required) so
// that the x509 authenticator can verify them against the client CA.
func TLSConfig(opts TLSOptions) (*tls.Config, error) {
	certFile, keyFile := opts.CertFile, opts.KeyFile
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("serverauth: --tls-cert-file and --tls-private-key-file go together (got %q and %q)", certFile, keyFile)
	}
	if certFile == "" {
		var err error
		if certFile, keyFile, err = selfSigned(opts); err != nil {
			return nil, err
		}
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("serverauth: serving certificate %s: %w", certFile, err)
	}
	// HTTP/2 first, as the kubelet's ListenAndServeTLS offers it: the API
	// server then reads a log through a stream whose data never comes
	// with its end, which its WebSocket copy (wsstream) would drop.
	// Upgrades (exec, attach, port-forward) offer only http/1.1.
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"}}
	if opts.MinVersion != "" {
		if cfg.MinVersion, err = tlsVersion(opts.MinVersion); err != nil {
			return nil, fmt.Errorf("serverauth: --tls-min-version: Invalid value: %q: %w", opts.MinVersion, err)
		}
	}
	if len(opts.CipherSuites) > 0 {
		if cfg.CipherSuites, err = tlsCipherSuites(opts.CipherSuites); err != nil {
			return nil, fmt.Errorf("serverauth: --tls-cipher-suites: %w", err)
		}
	}
	return cfg, nil
}

// selfSigned returns CertDir's kubelet.crt and kubelet.key, made first if
// they cannot be read, as the kubelet does.
func selfSigned(opts TLSOptions) (string, string, error) {
	if opts.CertDir == "" || !filepath.IsAbs(opts.CertDir) {
		return "", "", fmt.Errorf("serverauth: --cert-dir: Invalid value: %q: must be an absolute path", opts.CertDir)
	}
	certFile, keyFile := filepath.Join(opts.CertDir, "kubelet.crt"), filepath.Join(opts.CertDir, "kubelet.key")
	if ok, _ := certutil.CanReadCertAndKey(certFile, keyFile); ok {
		return certFile, keyFile, nil
	}
	host := opts.Hostname
	if host == "" {
		host, _ = os.Hostname()
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, opts.IPs, nil)
	if err != nil {
		return "", "", fmt.Errorf("serverauth: self-signed certificate: %w", err)
	}
	if err := certutil.WriteCert(certFile, cert); err != nil {
		return "", "", fmt.Errorf("serverauth: --cert-dir: %w", err)
	}
	if err := keyutil.WriteKey(keyFile, key); err != nil {
		return "", "", fmt.Errorf("serverauth: --cert-dir: %w", err)
	}
	return certFile, keyFile, nil
}

// tlsVersion is the version named as the kubelet's --tls-min-version
// takes it.
func tlsVersion(name string) (uint16, error) {
	for v, n := range map[uint16]string{tls.VersionTLS10: "VersionTLS10", tls.VersionTLS11: "VersionTLS11",
		tls.VersionTLS12: "VersionTLS12", tls.VersionTLS13: "VersionTLS13"} {
		if n == name {
			return v, nil
		}
	}
	return 0, fmt.Errorf("unknown tls version %q", name)
}

// tlsCipherSuites are the suites named as Go names them, secure or not,
// as the kubelet's --tls-cipher-suites takes them.
func tlsCipherSuites(names []string) ([]uint16, error) {
	known := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[s.Name] = s.ID
	}
	ids := make([]uint16, 0, len(names))
	for _, n := range names {
		id, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("Cipher suite %s not supported or doesn't exist", n)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
