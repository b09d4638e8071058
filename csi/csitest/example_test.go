package csitest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/csi/csitest"
)

// A fake driver for a test: its registration socket goes in the plugin
// registry a node agent watches, its node service answers NodeGetInfo.
func Example() {
	dir, _ := os.MkdirTemp("", "csitest")
	defer os.RemoveAll(dir)
	d, err := csitest.Start(csitest.Config{Name: "fake.csi.example.com", RegistryDir: filepath.Join(dir, "plugins_registry"),
		EndpointDir: filepath.Join(dir, "fake"), NodeID: "node-1", Topology: map[string]string{"topology.fake/zone": "a"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Stop()
	c, _ := csi.Dial(d.Endpoint())
	defer c.Close()
	info, err := c.NodeGetInfo(context.Background())
	fmt.Println(filepath.Base(d.RegistrationSocket()), info.NodeID, info.Topology, err)
	// Output: fake.csi.example.com-reg.sock node-1 map[topology.fake/zone:a] <nil>
}
