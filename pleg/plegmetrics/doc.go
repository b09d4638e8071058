// Package plegmetrics is the kubelet's PLEG metrics for package pleg, as a
// Prometheus collector the caller registers: kubelet_pleg_relist_duration_seconds,
// kubelet_pleg_relist_interval_seconds, kubelet_pleg_last_seen_seconds,
// kubelet_pleg_discard_events, kubelet_evented_pleg_connection_*,
// kubelet_running_pods and kubelet_running_containers.
//
// It is a package of its own so that pleg compiles without
// client_golang: pleg declares the small pleg.Metrics interface it records
// into, and this package implements it.
//
//	m := plegmetrics.New()
//	registry.MustRegister(m)
//	p, err := pleg.NewGeneric(pleg.Config{Runtime: manager, Cache: cache, Metrics: m})
package plegmetrics
