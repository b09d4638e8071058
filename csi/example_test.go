package csi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/csi/csitest"
)

// A driver registers (the plugin manager calls the Registry when its
// socket appears) and its node service is then at hand by name.
func Example() {
	dir, _ := os.MkdirTemp("", "csi")
	defer os.RemoveAll(dir)
	d, err := csitest.Start(csitest.Config{Name: "fake.csi.example.com", RegistryDir: filepath.Join(dir, "reg"),
		EndpointDir: filepath.Join(dir, "driver"), NodeID: "node-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Stop()
	drivers := csi.NewRegistry(csi.RegistryConfig{}) // NodeInfo: csi/nodeinfo, to record it in the API
	defer drivers.Close()
	ctx := context.Background()
	if err := drivers.RegisterPlugin(ctx, "fake.csi.example.com", d.Endpoint(), []string{"1.0.0"}); err != nil {
		fmt.Println(err)
		return
	}
	c, _ := drivers.Client("fake.csi.example.com")
	info, err := c.NodeGetInfo(ctx)
	fmt.Println(drivers.Drivers(), info.NodeID, err)
	// Output: [fake.csi.example.com] node-1 <nil>
}
