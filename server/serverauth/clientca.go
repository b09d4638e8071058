package serverauth

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"
)

// clientCAReload is how often Run looks at the client CA file: a
// rotated bundle is in use within this long.
const clientCAReload = 10 * time.Second

// clientCA is the --client-ca-file bundle, read again when it changes.
type clientCA struct {
	file    string
	mu      sync.Mutex
	content []byte
	pool    *x509.CertPool
}

func newClientCA(file string) (*clientCA, error) {
	c := &clientCA{file: file}
	if _, err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

// load reads the file, and takes its certificates if it changed; a file
// without one is an error, and the bundle in use stays.
func (c *clientCA) load() (changed bool, err error) {
	content, err := os.ReadFile(c.file)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	same := bytes.Equal(content, c.content)
	c.mu.Unlock()
	if same {
		return false, nil
	}
	certs, err := certutil.ParseCertsPEM(content)
	if err != nil {
		return false, fmt.Errorf("%s: %w", c.file, err)
	}
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	c.mu.Lock()
	c.content, c.pool = content, pool
	c.mu.Unlock()
	return true, nil
}

func (c *clientCA) roots() *x509.CertPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pool
}

func (c *clientCA) run(ctx context.Context, clk clock.WithTicker, log logr.Logger) {
	t := clk.NewTicker(clientCAReload)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if changed, err := c.load(); err != nil {
			log.Error(err, "Cannot reload the client CA bundle, keeping the one in use", "file", c.file)
		} else if changed {
			log.Info("Loaded a new client CA bundle", "file", c.file)
		}
	}
}
