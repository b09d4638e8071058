package gc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// ImageConfig configures an ImageGC. Images and Containers are required;
// zero fields take the kubelet's defaults.
type ImageConfig struct {
	Images ImageService
	// Containers lists every container of the runtime, anyone's: an image
	// any of them uses, in whatever state, is kept.
	Containers ContainerLister
	// Statuses reads each listed container's status, whose mounts name the
	// images of its image volumes (CRI Mount.image): those are kept too,
	// as the kubelet's handleImageVolumes keeps them. Default: Containers,
	// if it is a ContainerStatusReader (*runtime.Client is); nil then:
	// image volumes are not looked for.
	Statuses ContainerStatusReader
	// Policy is the kubelet's image GC policy (nil: DefaultImagePolicy()).
	Policy *ImagePolicy
	// Period is how often Run collects (default 5m).
	Period time.Duration
	// SandboxImage is the runtime's sandbox (pause) image, e.g.
	// containerd's sandbox_image, which is never removed. Containerd 1.7
	// and later also pin it, and pinned images are kept anyway; 1.6 does
	// not. "" protects none by name.
	SandboxImage string
	// FsStats gives the image filesystem's capacity and available bytes
	// at the mountpoint ImageFsInfo reports (default Statfs).
	FsStats FsStats
	// Recorder, with NodeName, records the kubelet's events on the Node:
	// FreeDiskSpaceFailed, InvalidDiskCapacity, and ImageGCFailed when
	// Run fails twice in a row. nil: no events.
	Recorder EventRecorder
	NodeName string
	// OnCollect, if set, is called after each of Run's passes (for
	// metrics, or a test).
	OnCollect func(ImageResult, error)
	Clock     clock.WithTicker
	Log       logr.Logger
}

// RemovedImage is an image the GC removed, and why (ImageReasonAge or
// ImageReasonSpace).
type RemovedImage struct {
	ImageRecord
	Reason string
}

// ImageResult is what an image GC pass did.
type ImageResult struct {
	Removed []RemovedImage
	// UsagePercent is the image filesystem's usage when the pass looked
	// (-1: it did not get that far); BytesToFree what the thresholds asked
	// for, Freed what the removals for space gave.
	UsagePercent int
	BytesToFree  int64
	Freed        int64
}

// FreeSpaceError is the kubelet's failure to bring the image filesystem
// down to the low threshold: not enough images could be removed.
type FreeSpaceError struct {
	Wanted, Freed int64
}

func (e *FreeSpaceError) Error() string {
	// The kubelet's words, which its FreeDiskSpaceFailed event carries.
	return fmt.Sprintf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.",
		e.Wanted, e.Freed)
}

// ImageGC is the kubelet's image garbage collector (its realImageGCManager).
//
// Images are tracked across passes, first detected and last used, in
// memory. EvictionOrder keeps those that may go — not used by any container
// of the runtime (as its image or, through Statuses, an image volume it
// mounts), not pinned, not the SandboxImage — least recently used first. OldImages picks those unused for MaxAge (0: off); when the image
// filesystem is at 85% or more (capacity and availability from FsStats,
// statfs(2) at the mountpoint CRI's ImageFsInfo reports), BytesToFree says
// how much brings it to 80% and ImagesToFree which images, skipping those
// first seen less than MinAge (2m) ago. Freeing too little is an error and
// a FreeDiskSpaceFailed event.
//
// Deviations from the kubelet:
//
//   - An image used by any container of the runtime, labelled by a kubelet
//     or not, is kept.
//   - For MaxAge, an image never seen in use counts as last used when it
//     was first detected; the kubelet removes such an image, however
//     recently pulled, once MaxAge has passed since it started.
//   - The sandbox image is named (SandboxImage) rather than relied on to
//     be pinned: containerd 1.6 does not pin it.
type ImageGC struct {
	cfg    ImageConfig
	policy ImagePolicy
	began  time.Time

	mu      sync.Mutex // one pass at a time; guards records
	records map[string]*ImageRecord
}

// NewImageGC checks cfg and fills in the kubelet's defaults. The GC's
// MaxAge clock starts now: no image is removed for age before MaxAge has
// passed since.
func NewImageGC(cfg ImageConfig) (*ImageGC, error) {
	if cfg.Images == nil {
		return nil, errors.New("gc: ImageConfig.Images: Required value")
	}
	if cfg.Containers == nil {
		return nil, errors.New("gc: ImageConfig.Containers: Required value: images in use are found from the runtime's containers")
	}
	policy := DefaultImagePolicy()
	if cfg.Policy != nil {
		policy = *cfg.Policy
	}
	if err := policy.validate(); err != nil {
		return nil, err
	}
	if cfg.Period < 0 {
		return nil, fmt.Errorf("gc: ImageConfig.Period: Invalid value: %v: must not be negative", cfg.Period)
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultImageGCPeriod
	}
	if cfg.FsStats == nil {
		cfg.FsStats = Statfs
	}
	if cfg.Statuses == nil {
		cfg.Statuses, _ = cfg.Containers.(ContainerStatusReader)
	}
	if cfg.Recorder != nil && cfg.NodeName == "" {
		return nil, errors.New("gc: ImageConfig.NodeName: Required value: the Recorder records events on the Node")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &ImageGC{cfg: cfg, policy: policy, began: cfg.Clock.Now(), records: map[string]*ImageRecord{}}, nil
}

// validate applies the kubelet's checks of its image GC settings.
func (p ImagePolicy) validate() error {
	const f = "gc: ImageConfig.Policy."
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf(f+"HighThresholdPercent: Invalid value: %d: must be between 0 and 100", p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf(f+"LowThresholdPercent: Invalid value: %d: must be between 0 and 100", p.LowThresholdPercent)
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return fmt.Errorf(f+"LowThresholdPercent: Invalid value: %d: must not be above HighThresholdPercent (%d)",
			p.LowThresholdPercent, p.HighThresholdPercent)
	case p.MinAge < 0:
		return fmt.Errorf(f+"MinAge: Invalid value: %v: must not be negative", p.MinAge)
	case p.MaxAge < 0:
		return fmt.Errorf(f+"MaxAge: Invalid value: %v: must not be negative", p.MaxAge)
	case p.MaxAge != 0 && p.MaxAge < p.MinAge:
		return fmt.Errorf(f+"MaxAge: Invalid value: %v: must not be below MinAge (%v)", p.MaxAge, p.MinAge)
	}
	return nil
}

// Policy returns the policy in force.
func (g *ImageGC) Policy() ImagePolicy { return g.policy }

// Run collects every Period, the first time at once, until ctx ends, as the
// kubelet does: a failed pass is logged, and when the one before failed too
// it is recorded as an ImageGCFailed event. With a Disabled policy it does
// nothing. It returns nil when ctx ends.
func (g *ImageGC) Run(ctx context.Context) error {
	if g.policy.Disabled() {
		g.cfg.Log.V(2).Info("image garbage collection disabled: HighThresholdPercent is 100 and MaxAge 0")
		<-ctx.Done()
		return nil
	}
	t := g.cfg.Clock.NewTicker(g.cfg.Period)
	defer t.Stop()
	prevFailed := false
	for {
		res, err := g.GarbageCollect(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil && prevFailed:
			g.cfg.Log.Error(err, "image garbage collection failed multiple times in a row")
			event(g.cfg.Recorder, g.cfg.NodeName, ReasonImageGCFailed, err.Error())
		case err != nil:
			g.cfg.Log.Error(err, "image garbage collection failed once; stats may not be ready yet")
			prevFailed = true
		default:
			level := 4
			if prevFailed {
				level, prevFailed = 1, false
			}
			g.cfg.Log.V(level).Info("image garbage collection succeeded", "removed", len(res.Removed), "usagePercent", res.UsagePercent)
		}
		if g.cfg.OnCollect != nil && ctx.Err() == nil {
			g.cfg.OnCollect(res, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// GarbageCollect runs one pass of the kubelet's image GC: images are
// detected (first seen, last used), those unused for MaxAge removed
// (OldImages), then, when the image filesystem's usage is at or above the
// high threshold, unused ones removed least recently used first until it
// is down to the low threshold (BytesToFree, ImagesToFree). Freeing too
// little is a *FreeSpaceError, recorded as FreeDiskSpaceFailed.
func (g *ImageGC) GarbageCollect(ctx context.Context) (ImageResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	res := ImageResult{UsagePercent: -1}
	now := g.cfg.Clock.Now()
	ordered, err := g.detect(ctx, now)
	if err != nil {
		return res, err
	}

	if old := OldImages(g.policy, ordered, now, g.began); len(old) > 0 {
		var errs []error
		for _, im := range old {
			if err := g.remove(ctx, im, ImageReasonAge, &res); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return res, fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w",
				g.policy.MaxAge, errors.Join(errs...))
		}
		ordered = slices.DeleteFunc(ordered, func(im ImageRecord) bool { return g.records[im.ID] == nil })
	}

	capacity, available, err := g.imageFs(ctx)
	if err != nil {
		return res, err
	}
	if capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		event(g.cfg.Recorder, g.cfg.NodeName, ReasonInvalidDiskCapacity, err.Error())
		return res, err
	}
	res.UsagePercent, res.BytesToFree = BytesToFree(g.policy, capacity, available)
	if res.UsagePercent < g.policy.HighThresholdPercent {
		return res, nil
	}
	g.cfg.Log.Info("disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", res.UsagePercent, "highThreshold", g.policy.HighThresholdPercent,
		"amountToFree", res.BytesToFree, "lowThreshold", g.policy.LowThresholdPercent)
	if err := g.freeSpace(ctx, ordered, now, res.BytesToFree, &res); err != nil {
		return res, err
	}
	if res.Freed < res.BytesToFree {
		err := &FreeSpaceError{Wanted: res.BytesToFree, Freed: res.Freed}
		event(g.cfg.Recorder, g.cfg.NodeName, ReasonFreeDiskSpaceFailed, err.Error())
		return res, err
	}
	return res, nil
}

// DeleteUnusedImages is what the kubelet's eviction manager does under
// disk pressure: every image that may be removed and is older than MinAge
// goes, whatever the thresholds.
func (g *ImageGC) DeleteUnusedImages(ctx context.Context) (ImageResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	res := ImageResult{UsagePercent: -1}
	now := g.cfg.Clock.Now()
	ordered, err := g.detect(ctx, now)
	if err != nil {
		return res, err
	}
	return res, g.freeSpace(ctx, ordered, now, math.MaxInt64, &res)
}

// freeSpace removes what ImagesToFree picks until bytesToFree is freed or
// nothing eligible is left; an image that fails to go is passed over, as
// in the kubelet, and the errors reported at the end.
func (g *ImageGC) freeSpace(ctx context.Context, ordered []ImageRecord, now time.Time, bytesToFree int64, res *ImageResult) error {
	var errs []error
	for res.Freed < bytesToFree {
		picked := ImagesToFree(g.policy, ordered, now, bytesToFree-res.Freed)
		if len(picked) == 0 {
			break
		}
		tried := make(map[string]bool, len(picked))
		for _, im := range picked {
			tried[im.ID] = true
			if err := g.remove(ctx, im, ImageReasonSpace, res); err != nil {
				errs = append(errs, err)
				continue
			}
			res.Freed += im.Size
		}
		ordered = slices.DeleteFunc(ordered, func(im ImageRecord) bool { return tried[im.ID] })
	}
	if len(errs) > 0 {
		return fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w",
			bytesToFree, res.Freed, errors.Join(errs...))
	}
	return nil
}

func (g *ImageGC) remove(ctx context.Context, im ImageRecord, reason string, res *ImageResult) error {
	g.cfg.Log.Info("removing image to free bytes", "imageID", im.ID, "tags", im.RepoTags, "size", im.Size, "reason", reason)
	if err := g.cfg.Images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: im.ID}); err != nil {
		return fmt.Errorf("removing image %s %v: %w", im.ID, im.RepoTags, err)
	}
	delete(g.records, im.ID)
	res.Removed = append(res.Removed, RemovedImage{ImageRecord: im, Reason: reason})
	return nil
}

// detect is the kubelet's detectImages: the runtime's images are listed
// and recorded (first detected now if new, last used now if a container
// uses one), records of images gone are dropped. It returns the images
// that may be removed in eviction order.
func (g *ImageGC) detect(ctx context.Context, now time.Time) ([]ImageRecord, error) {
	images, err := g.cfg.Images.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	containers, err := g.cfg.Containers.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	var sandboxID string
	if g.cfg.SandboxImage != "" {
		st, err := g.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: g.cfg.SandboxImage}, false)
		if err != nil {
			return nil, fmt.Errorf("resolving the sandbox image %s: %w", g.cfg.SandboxImage, err)
		}
		sandboxID = st.GetImage().GetId()
	}
	used := make(map[string]bool, 2*len(containers))
	for _, c := range containers {
		if c.ImageRef != "" {
			used[c.ImageRef] = true
		}
		if ref := c.GetImage().GetImage(); ref != "" {
			used[ref] = true
		}
		if err := g.imageVolumesInUse(ctx, c.GetId(), used); err != nil {
			return nil, err
		}
	}
	current := make(map[string]bool, len(images))
	all := make([]ImageRecord, 0, len(images))
	for _, im := range images {
		current[im.Id] = true
		rec := g.records[im.Id]
		if rec == nil {
			rec = &ImageRecord{ID: im.Id, FirstDetected: now}
			g.records[im.Id] = rec
		}
		rec.RepoTags = im.RepoTags
		rec.Size = int64(im.Size)
		rec.Pinned = im.Pinned
		rec.InUse = isUsed(im, used)
		if rec.InUse {
			rec.LastUsed = now
		}
		rec.Sandbox = sandboxID != "" && im.Id == sandboxID ||
			g.cfg.SandboxImage != "" && slices.Contains(im.RepoTags, g.cfg.SandboxImage)
		all = append(all, *rec)
	}
	for id := range g.records {
		if !current[id] {
			delete(g.records, id)
		}
	}
	return EvictionOrder(all), nil
}

// imageVolumesInUse marks the images container id mounts (image volumes)
// as used, as the kubelet's handleImageVolumes; a container gone since the
// listing mounts nothing.
func (g *ImageGC) imageVolumesInUse(ctx context.Context, id string, used map[string]bool) error {
	if g.cfg.Statuses == nil {
		return nil
	}
	resp, err := g.cfg.Statuses.ContainerStatus(ctx, id, false)
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("container %s status: %w", id, err)
	}
	for _, m := range resp.GetStatus().GetMounts() {
		if ref := m.GetImage().GetImage(); ref != "" {
			used[ref] = true
		}
	}
	return nil
}

// isUsed: a container refers to the image by ID, tag or digest.
func isUsed(im *runtimeapi.Image, used map[string]bool) bool {
	if used[im.Id] {
		return true
	}
	for _, refs := range [][]string{im.RepoTags, im.RepoDigests} {
		for _, r := range refs {
			if used[r] {
				return true
			}
		}
	}
	return false
}

// imageFs returns the image filesystem's capacity and available bytes.
func (g *ImageGC) imageFs(ctx context.Context) (capacity, available int64, err error) {
	resp, err := g.cfg.Images.ImageFsInfo(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("image filesystem info: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 {
		return 0, 0, errors.New("image filesystem info: the runtime reports no image filesystem")
	}
	mount := fss[0].GetFsId().GetMountpoint()
	c, a, err := g.cfg.FsStats.FsStats(mount)
	if err != nil {
		return 0, 0, fmt.Errorf("image filesystem at %q: %w", mount, err)
	}
	return int64(min(c, math.MaxInt64)), int64(min(a, math.MaxInt64)), nil
}
