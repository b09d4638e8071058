package pluginmanager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodekit-dev/nodekit/pluginmanager"
)

// logHandler prints what registers.
type logHandler struct{}

func (logHandler) ValidatePlugin(string, string, []string) error { return nil }
func (logHandler) RegisterPlugin(_ context.Context, name, _ string, versions []string) error {
	fmt.Println("registered", name, versions)
	return nil
}
func (logHandler) DeRegisterPlugin(name, _ string) { fmt.Println("deregistered", name) }

// A node agent watches <root-dir>/plugins_registry for CSI drivers; the
// node-driver-registrar sidecar of each driver puts its socket there.
func Example() {
	dir, _ := os.MkdirTemp("", "root")
	defer os.RemoveAll(dir)
	m, err := pluginmanager.New(pluginmanager.Config{Dir: filepath.Join(dir, pluginmanager.DefaultDirName),
		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: logHandler{}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // here: stop at once; an agent runs it until it stops
	fmt.Println(m.Run(ctx), len(m.Registered()))
	// Output: <nil> 0
}
