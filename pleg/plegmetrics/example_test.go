package plegmetrics_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/pleg/plegmetrics"
)

// The caller registers the collector and hands it to the PLEG as its
// pleg.Metrics; here the PLEG's calls are made by hand.
func Example() {
	m := plegmetrics.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	var recorder pleg.Metrics = m // pleg.Config{Metrics: m}
	recorder.Seen(time.Unix(1700000000, 0), 3, map[kc.ContainerState]int{kc.ContainerStateRunning: 4})

	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "kubelet_running_pods" {
			fmt.Println(f.GetName(), f.Metric[0].GetGauge().GetValue())
		}
	}
	// Output:
	// kubelet_running_pods 3
}
