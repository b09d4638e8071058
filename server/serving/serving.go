package serving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodekit-dev/nodekit/server"
	"github.com/nodekit-dev/nodekit/server/serverauth"
)

// Config is what to serve where. A zero port is not served, as in the
// kubelet.
type Config struct {
	Address        string
	Port           int // the API over TLS, behind Auth (the kubelet's 10250)
	ReadOnlyPort   int
	HealthzAddress string
	HealthzPort    int // the kubelet's 10248
	// TLS is Port's certificate: the files, or one made once in CertDir;
	// Hostname and IPs name the node.
	TLS serverauth.TLSOptions
	// Auth is Port's authentication and authorization; its TokenReviews
	// and SubjectAccessReviews are the API server's (nil: none).
	Auth                   serverauth.Config
	API, ReadOnly, Healthz http.Handler
	// Registerer, if set, gets kubelet_certificate_manager_server_ttl_seconds
	// for the API port's certificate.
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// ErrWebhookWithoutAPIServer: webhook authentication or authorization was
// asked for Port without the API server's clients to ask; the kubelet
// refuses to start so too.
var ErrWebhookWithoutAPIServer = errors.New("serving: webhook authentication or authorization needs an API server")

// Servers are the bound listeners; Run serves them.
type Servers struct {
	listeners []listener
	auth      *serverauth.Auth // nil: Port not served
	log       logr.Logger
}

type listener struct {
	l net.Listener
	h http.Handler
}

// Listen binds cfg's ports. Nothing stays bound when it fails.
func Listen(cfg Config) (*Servers, error) {
	s := &Servers{log: cfg.Log}
	listen := func(addr string, port int, h http.Handler, wrap func(net.Listener) net.Listener) error {
		if port == 0 {
			return nil
		}
		if h == nil {
			return fmt.Errorf("serving: port %d: no handler", port)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("serving: %w", err)
		}
		if wrap != nil {
			l = wrap(l)
		}
		s.listeners = append(s.listeners, listener{l, h})
		return nil
	}
	err := func() error {
		if cfg.Port != 0 {
			if cfg.API == nil {
				return errors.New("serving: Port without an API handler")
			}
			auth, err := serverauth.New(cfg.Auth)
			if err != nil {
				if cfg.Auth.TokenReviews == nil || cfg.Auth.SubjectAccessReviews == nil {
					return fmt.Errorf("%w: %w", ErrWebhookWithoutAPIServer, err)
				}
				return err
			}
			s.auth = auth
			tlsCfg, err := serverauth.TLSConfig(cfg.TLS)
			if err != nil {
				return err
			}
			if cfg.Registerer != nil {
				var leaf *x509.Certificate
				if len(tlsCfg.Certificates) > 0 && len(tlsCfg.Certificates[0].Certificate) > 0 {
					leaf, _ = x509.ParseCertificate(tlsCfg.Certificates[0].Certificate[0])
				}
				if err := cfg.Registerer.Register(server.ServingCertificateTTL(func() *x509.Certificate { return leaf })); err != nil {
					return fmt.Errorf("serving: Config.Registerer: %w", err)
				}
			}
			if err := listen(cfg.Address, cfg.Port, auth.Filter(cfg.API),
				func(l net.Listener) net.Listener { return tls.NewListener(l, tlsCfg) }); err != nil {
				return err
			}
		}
		return errors.Join(listen(cfg.Address, cfg.ReadOnlyPort, cfg.ReadOnly, nil),
			listen(cfg.HealthzAddress, cfg.HealthzPort, cfg.Healthz, nil))
	}()
	if err != nil {
		for _, l := range s.listeners {
			_ = l.l.Close()
		}
		return nil, err
	}
	return s, nil
}

// Addrs are the addresses bound, Port's first when served.
func (s *Servers) Addrs() []net.Addr {
	out := make([]net.Addr, len(s.listeners))
	for i, l := range s.listeners {
		out[i] = l.l.Addr()
	}
	return out
}

// Run serves until ctx ends and returns once every server has stopped.
func (s *Servers) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if s.auth != nil {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.auth.Run(ctx) }()
	}
	for _, l := range s.listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := server.Serve(ctx, l.l, l.h); err != nil {
				s.log.Error(err, "http server", "address", l.l.Addr().String())
			}
		}()
	}
	wg.Wait()
	return nil
}
