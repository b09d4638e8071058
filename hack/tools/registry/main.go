// Command registry serves container images over the registry HTTP API
// (OCI distribution, plain HTTP) from docker-archive tarballs such as
// mkimage writes, so that a runtime can pull them: a pull policy of Always,
// or a spec that pulls on purpose, needs a registry even on a machine that
// reaches none. The images are held in memory (go-containerregistry's
// pkg/registry) under the repository and tag of each archive's RepoTags,
// without its registry host: nodekit.local/e2e-test-images/busybox:1.37.0-1
// is served as e2e-test-images/busybox:1.37.0-1, and containerd is told by a
// hosts.toml that nodekit.local is this server.
//
// Usage:
//
//	registry -addr 127.0.0.1:17500 [-ready FILE] ARCHIVE.tar...
//
// Once every archive is served, registry writes "ready" to FILE (when given)
// and to stderr, then serves until it is signalled. Pushes are accepted too.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:17500", "address to listen on")
	ready := flag.String("ready", "", "file to write \"ready\" to once every archive is served")
	verbose := flag.Bool("v", false, "log every request")
	flag.Parse()
	if err := run(*addr, *ready, *verbose, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func run(addr, ready string, verbose bool, archives []string) error {
	if len(archives) == 0 {
		return errors.New("no archives given")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	logger := log.New(io.Discard, "", 0)
	if verbose {
		logger = log.New(os.Stderr, "registry: ", log.LstdFlags)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(logger))}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	for _, a := range archives {
		if err := push(ln.Addr().String(), a); err != nil {
			return err
		}
	}
	if ready != "" {
		if err := os.WriteFile(ready, []byte("ready\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "registry: %d archives served on http://%s: ready\n", len(archives), ln.Addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case err := <-errc:
		return err
	case <-sig:
		return srv.Close()
	}
}

// push writes every tagged image of the archive to the registry at addr,
// under its repository and tag without the registry host.
func push(addr, archive string) error {
	tags, err := repoTags(archive)
	if err != nil {
		return err
	}
	for _, t := range tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("%s: RepoTag %q: %w", archive, t, err)
		}
		img, err := tarball.ImageFromPath(archive, &tag)
		if err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		dst, err := name.NewTag(addr+"/"+tag.RepositoryStr()+":"+tag.TagStr(), name.Insecure)
		if err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		if err := remote.Write(dst, img); err != nil {
			return fmt.Errorf("%s: push %s: %w", archive, dst, err)
		}
	}
	return nil
}

// repoTags lists the RepoTags of the archive's manifest.json.
func repoTags(archive string) ([]string, error) {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	var tags []string
	for _, d := range m {
		tags = append(tags, d.RepoTags...)
	}
	if len(tags) == 0 {
		return nil, fmt.Errorf("%s: no RepoTags in manifest.json", archive)
	}
	return tags, nil
}
