package gc

import (
	"cmp"
	"slices"
	"time"
)

// The kubelet's image GC defaults (pkg/kubelet/apis/config/v1beta1).
const (
	// DefaultImageGCPeriod is how often the kubelet collects images.
	DefaultImageGCPeriod = 5 * time.Minute
	// DefaultImageGCHighThresholdPercent is --image-gc-high-threshold.
	DefaultImageGCHighThresholdPercent = 85
	// DefaultImageGCLowThresholdPercent is --image-gc-low-threshold.
	DefaultImageGCLowThresholdPercent = 80
	// DefaultImageMinimumGCAge is --minimum-image-ttl-duration.
	DefaultImageMinimumGCAge = 2 * time.Minute
)

// The reasons an image is removed (the kubelet's
// image_garbage_collected_total reasons).
const (
	ImageReasonAge   = "age"
	ImageReasonSpace = "space"
)

// ImagePolicy is the kubelet's image GC policy (images.ImageGCPolicy).
type ImagePolicy struct {
	// HighThresholdPercent: at this disk usage of the image filesystem or
	// above, images are removed (imageGCHighThresholdPercent, default 85);
	// 100 turns space-based collection off.
	HighThresholdPercent int
	// LowThresholdPercent is the usage collection brings the disk down to
	// (imageGCLowThresholdPercent, default 80).
	LowThresholdPercent int
	// MinAge: an image first seen less than MinAge ago is kept, as it may
	// just have been pulled for a container about to start
	// (imageMinimumGCAge, default 2m).
	MinAge time.Duration
	// MaxAge, when not 0, removes unused images not used for that long,
	// whatever the disk usage (imageMaximumGCAge, default 0: off).
	MaxAge time.Duration
}

// DefaultImagePolicy is the kubelet's: high 85%, low 80%, MinAge 2m,
// MaxAge off.
func DefaultImagePolicy() ImagePolicy {
	return ImagePolicy{HighThresholdPercent: DefaultImageGCHighThresholdPercent,
		LowThresholdPercent: DefaultImageGCLowThresholdPercent, MinAge: DefaultImageMinimumGCAge}
}

// Disabled says whether the policy can never remove an image: the
// kubelet does not start its image GC then.
func (p ImagePolicy) Disabled() bool { return p.HighThresholdPercent == 100 && p.MaxAge == 0 }

// ImageRecord is what the image GC knows of an image: the runtime's
// answer, and the kubelet's bookkeeping across detections.
type ImageRecord struct {
	ID       string
	RepoTags []string
	Size     int64
	// FirstDetected is when the image was first listed (since the GC
	// was created); LastUsed when a container was last seen using it
	// (zero: never).
	FirstDetected, LastUsed time.Time
	// InUse: a container (of any state, anyone's) uses it now.
	InUse bool
	// Pinned: the runtime says it must not be removed (CRI Image.Pinned;
	// containerd 1.7 and later pin the sandbox image).
	Pinned bool
	// Sandbox: it is the runtime's sandbox (pause) image.
	Sandbox bool
}

// EvictionOrder is the kubelet's imagesInEvictionOrder: the images that may
// be removed at all (not in use, not pinned, not the sandbox image), least
// recently used first, then first detected first.
func EvictionOrder(images []ImageRecord) []ImageRecord {
	out := make([]ImageRecord, 0, len(images))
	for _, im := range images {
		if !im.InUse && !im.Pinned && !im.Sandbox {
			out = append(out, im)
		}
	}
	slices.SortFunc(out, func(a, b ImageRecord) int {
		if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
			return c
		}
		if c := a.FirstDetected.Compare(b.FirstDetected); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// OldImages is the kubelet's freeOldImages as a pure function: of ordered
// (EvictionOrder's), the images unused for longer than p.MaxAge, none
// while MaxAge is 0 or has not yet passed since the GC began (began), as
// images' last use before then is unknown. Unlike the kubelet, an image
// never seen in use counts as last used when first detected: the kubelet
// removes a just-pulled image that no container has used yet as soon as
// MaxAge has passed since it started.
func OldImages(p ImagePolicy, ordered []ImageRecord, now, began time.Time) []ImageRecord {
	if p.MaxAge == 0 || now.Sub(began) <= p.MaxAge {
		return nil
	}
	var out []ImageRecord
	for _, im := range ordered {
		last := im.LastUsed
		if last.Before(im.FirstDetected) {
			last = im.FirstDetected
		}
		if now.Sub(last) > p.MaxAge {
			out = append(out, im)
		}
	}
	return out
}

// BytesToFree is the kubelet's threshold rule: the image filesystem's usage
// in percent, 100 - available*100/capacity, and, when that is at or above
// p.HighThresholdPercent, the bytes to free to bring it down to
// p.LowThresholdPercent, capacity*(100-low)/100 - available (0 below the
// high threshold). capacity must be positive; available is capped at it.
func BytesToFree(p ImagePolicy, capacity, available int64) (usagePercent int, toFree int64) {
	available = min(available, capacity)
	usagePercent = 100 - int(available*100/capacity)
	if usagePercent < p.HighThresholdPercent {
		return usagePercent, 0
	}
	return usagePercent, capacity*int64(100-p.LowThresholdPercent)/100 - available
}

// ImagesToFree is the kubelet's freeSpace as a pure function: of ordered
// (EvictionOrder's), in that order, the images to remove to free
// bytesToFree, skipping those used at now or later and those first seen
// less than p.MinAge before now. It stops once their sizes add up to
// bytesToFree; if they never do, it returns every eligible image.
func ImagesToFree(p ImagePolicy, ordered []ImageRecord, now time.Time, bytesToFree int64) []ImageRecord {
	var out []ImageRecord
	var sum int64
	for _, im := range ordered {
		if sum >= bytesToFree {
			break
		}
		if !im.LastUsed.Before(now) || now.Sub(im.FirstDetected) < p.MinAge {
			continue
		}
		out = append(out, im)
		sum += im.Size
	}
	return out
}
