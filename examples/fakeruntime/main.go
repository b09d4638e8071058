// Command fakeruntime serves nodekit's in-memory fake CRI runtime
// (runtime/fake) on a unix socket until SIGINT or SIGTERM, so that CRI
// tools (crictl, a kubelet under test) can talk to it:
//
//	go run ./examples/fakeruntime --listen unix:///tmp/fake.sock \
//		--image docker.io/library/busybox:latest --host-ports
//	crictl --runtime-endpoint unix:///tmp/fake.sock images
//
// The pause and testbin images are always preloaded; --image adds more
// (repeatable). --host-ports lets testbin's serve and grpc modes really
// listen on loopback ports.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nodekit-dev/nodekit/runtime/fake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// imageFlags collects repeated --image flags.
type imageFlags []string

func (f *imageFlags) String() string { return strings.Join(*f, ",") }

func (f *imageFlags) Set(v string) error {
	if v == "" {
		return errors.New("empty image reference")
	}
	*f = append(*f, v)
	return nil
}

// run serves until ctx ends and returns the exit status: 2 for bad usage,
// 1 if serving fails.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakeruntime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "unix:///tmp/nodekit-fake.sock", "CRI endpoint to serve, unix:///absolute/path.sock")
	var images imageFlags
	fs.Var(&images, "image", "image to preload (repeatable); "+fake.PauseImage+" and "+fake.TestbinImage+" always are")
	hostPorts := fs.Bool("host-ports", false, "let testbin's serve and grpc modes really listen on loopback ports")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2 // flag has printed the error and the usage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakeruntime: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	rt := fake.New(fake.WithImages(fake.PauseImage, fake.TestbinImage), fake.WithHostPorts(*hostPorts))
	if err := rt.LoadImages(images...); err != nil {
		_ = rt.Close()
		fmt.Fprintf(stderr, "fakeruntime: --image: %v\n", err)
		return 2
	}
	stop, err := rt.Start(*listen)
	if err != nil {
		_ = rt.Close()
		log.Error("cannot serve", "err", err)
		return 1
	}
	log.Info("serving fake CRI runtime", "endpoint", *listen,
		"images", append([]string{fake.PauseImage, fake.TestbinImage}, images...), "hostPorts", *hostPorts)
	<-ctx.Done()
	log.Info("stopping")
	stop()
	log.Info("stopped")
	return 0
}
