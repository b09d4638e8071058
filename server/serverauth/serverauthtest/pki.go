// Package serverauthtest makes the certificates that tests of a secured
// node API need: a client CA, as --client-ca-file, and a client
// certificate it signed, as the API server's kubelet client presents.
//
//	caFile, cert, err := serverauthtest.ClientPKI(dir, "kube-apiserver-kubelet-client", "system:masters")
//	// start the node with --client-ca-file=caFile; then call it with
//	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
//		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
package serverauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// ClientPKI makes a CA, written to dir/ca.crt, and a client certificate
// it signed for user cn in groups orgs (the subject's CN and O, as the
// x509 authenticator reads them), valid for an hour either side of now.
func ClientPKI(dir, cn string, orgs ...string) (caFile string, client tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", client, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client-ca"}, IsCA: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", client, fmt.Errorf("client CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return "", client, err
	}
	caFile = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		return "", client, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", client, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return "", client, fmt.Errorf("client certificate: %w", err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
