// Command initrss makes an API client, as an agent does at start, and
// prints its own resident memory: kubeapi's, or built with -tags clientgo
// client-go's typed clientset (two binaries: what is linked is
// initialized). TestMeasureInitMemory builds and runs both.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"k8s.io/client-go/rest"
)

func main() {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	hc, err := rest.HTTPClientFor(cfg)
	if err == nil {
		err = newClient(cfg, hc)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runtime.GC()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "RssAnon:") || strings.HasPrefix(l, "RssFile:") {
			fmt.Println(strings.Join(strings.Fields(l), " "))
		}
	}
}
