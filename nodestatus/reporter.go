package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// The kubelet's node status timing.
const (
	DefaultUpdateFrequency = 10 * time.Second // --node-status-update-frequency
	DefaultReportFrequency = 5 * time.Minute  // nodeStatusReportFrequency
	// updateRetries is nodeStatusUpdateRetry: tries per period.
	updateRetries = 5
	// Registration retries back off from 100ms, doubling up to 7s.
	registerInitialBackoff = 100 * time.Millisecond
	registerMaxBackoff     = 7 * time.Second
	// fastUpdatePeriod and nodeReadyGracePeriod are fastStatusUpdateOnce's.
	fastUpdatePeriod     = 100 * time.Millisecond
	nodeReadyGracePeriod = 120 * time.Second
)

// ReporterConfig configures a Reporter; zero fields take the kubelet's
// defaults.
type ReporterConfig struct {
	Client NodesGetter
	Node   *Builder
	// UpdateFrequency is how often the status is computed (10s);
	// ReportFrequency how often it is written when nothing changed (5m).
	UpdateFrequency time.Duration
	ReportFrequency time.Duration
	Clock           clock.WithTicker
	Log             logr.Logger
}

// Reporter registers the node and keeps its status in the API: computed
// every UpdateFrequency, PATCHed when it changed or ReportFrequency has
// passed. Unlike the kubelet, which registers once per start, it
// registers again when the Node is deleted.
type Reporter struct {
	cfg ReporterConfig

	mu         sync.Mutex
	registered bool
	lastReport time.Time
}

// NewReporter validates cfg.
func NewReporter(cfg ReporterConfig) (*Reporter, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("nodestatus: ReporterConfig.Client is nil")
	case cfg.Node == nil:
		return nil, errors.New("nodestatus: ReporterConfig.Node is nil")
	case cfg.UpdateFrequency < 0 || cfg.ReportFrequency < 0:
		return nil, fmt.Errorf("nodestatus: ReporterConfig: frequencies must not be negative (%v, %v)", cfg.UpdateFrequency, cfg.ReportFrequency)
	}
	if cfg.UpdateFrequency == 0 {
		cfg.UpdateFrequency = DefaultUpdateFrequency
	}
	if cfg.ReportFrequency == 0 {
		cfg.ReportFrequency = DefaultReportFrequency
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Reporter{cfg: cfg}, nil
}

// Registered reports whether the node is registered.
func (r *Reporter) Registered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered
}

// Run registers the node, retrying with back-off, then syncs its status
// every UpdateFrequency until ctx ends; it returns nil then.
func (r *Reporter) Run(ctx context.Context) error {
	backoff := registerInitialBackoff
	for !r.Registered() {
		if err := r.register(ctx); err != nil {
			r.cfg.Log.Error(err, "Unable to register node with API server", "node", r.cfg.Node.Name())
			if !r.sleep(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, registerMaxBackoff)
		}
	}
	r.fastUpdateOnce(ctx)
	ticker := r.cfg.Clock.NewTicker(r.cfg.UpdateFrequency)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
				r.cfg.Log.Error(err, "Unable to update node status", "node", r.cfg.Node.Name())
			}
		}
	}
}

// fastUpdateOnce is the kubelet's fastStatusUpdateOnce: once registered,
// the node's readiness is checked every 100ms and the status written as
// soon as it is Ready (or after nodeReadyGracePeriod anyway), rather than
// at the first tick, UpdateFrequency later: pods are scheduled sooner.
func (r *Reporter) fastUpdateOnce(ctx context.Context) {
	start := r.cfg.Clock.Now()
	for {
		if timedOut := r.cfg.Clock.Since(start) >= nodeReadyGracePeriod; timedOut || r.cfg.Node.readyNow(ctx) {
			err := r.Sync(ctx)
			if err == nil || timedOut || ctx.Err() != nil {
				return
			}
			r.cfg.Log.Error(err, "Unable to update node status", "node", r.cfg.Node.Name())
		}
		if !r.sleep(ctx, fastUpdatePeriod) {
			return
		}
	}
}

func (r *Reporter) sleep(ctx context.Context, d time.Duration) bool {
	t := r.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

func (r *Reporter) register(ctx context.Context) error {
	if _, err := r.cfg.Node.Register(ctx, r.cfg.Client); err != nil {
		return err
	}
	r.mu.Lock()
	r.registered, r.lastReport = true, r.cfg.Clock.Now()
	r.mu.Unlock()
	r.cfg.Log.Info("Successfully registered node", "node", r.cfg.Node.Name())
	return nil
}

// Sync computes the status once and writes it if needed, trying up to 5
// times as the kubelet does; a Node that is gone is registered again.
func (r *Reporter) Sync(ctx context.Context) error {
	var err error
	for i := 0; i < updateRetries; i++ {
		if err = r.trySync(ctx); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("update node status exceeds retry count: %w", err)
}

func (r *Reporter) trySync(ctx context.Context) error {
	name := r.cfg.Node.Name()
	old, err := r.cfg.Client.Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.cfg.Log.Info("Node is gone from the API server; registering it again", "node", name)
		r.mu.Lock()
		r.registered = false
		r.mu.Unlock()
		return r.register(ctx)
	}
	if err != nil {
		return fmt.Errorf("error getting node %q: %w", name, err)
	}
	updated := old.DeepCopy()
	r.cfg.Node.SetStatus(ctx, updated)
	now := r.cfg.Clock.Now()
	r.mu.Lock()
	due := !now.Before(r.lastReport.Add(r.cfg.ReportFrequency))
	r.mu.Unlock()
	if !due && !statusChanged(&old.Status, &updated.Status) {
		return nil
	}
	if _, err := patchStatus(ctx, r.cfg.Client, old, updated); err != nil {
		return err
	}
	r.mu.Lock()
	r.lastReport = now
	r.mu.Unlock()
	return nil
}
