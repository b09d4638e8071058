package serverauthtest_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/nodekit-dev/nodekit/server/serverauth/serverauthtest"
)

// A client CA for the node's --client-ca-file and the certificate the API
// server presents to nodes.
func ExampleClientPKI() {
	dir, _ := os.MkdirTemp("", "pki")
	defer os.RemoveAll(dir)
	caFile, cert, err := serverauthtest.ClientPKI(dir, "kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		panic(err)
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	_ = &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true} // a client of the node
	_, err = os.Stat(caFile)
	fmt.Println(leaf.Subject.CommonName, leaf.Subject.Organization, err == nil)
	// Output: kube-apiserver-kubelet-client [system:masters] true
}
