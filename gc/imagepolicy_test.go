package gc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/nodekit-dev/nodekit/gc"
)

func img(id string, size int64, firstSeen, lastUsed time.Duration) gc.ImageRecord {
	r := gc.ImageRecord{ID: id, Size: size, FirstDetected: epoch.Add(-firstSeen)}
	if lastUsed >= 0 {
		r.LastUsed = epoch.Add(-lastUsed)
	}
	return r
}

const never = -1

func imageIDs(rs []gc.ImageRecord) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// TestEvictionOrder checks the kubelet's imagesInEvictionOrder: what may
// go at all, least recently used first.
func TestEvictionOrder(t *testing.T) {
	inUse := img("in-use", 1, time.Hour, 0)
	inUse.InUse = true
	pinned := img("pinned", 1, time.Hour, never)
	pinned.Pinned = true
	sandbox := img("pause", 1, time.Hour, never)
	sandbox.Sandbox = true
	got := gc.EvictionOrder([]gc.ImageRecord{
		img("used-recently", 1, time.Hour, time.Minute),
		img("used-long-ago", 1, time.Hour, 50*time.Minute),
		img("never-used-newer", 1, 10*time.Minute, never),
		img("never-used-older", 1, 30*time.Minute, never),
		inUse, pinned, sandbox,
	})
	assert.Equal(t, []string{"never-used-older", "never-used-newer", "used-long-ago", "used-recently"}, imageIDs(got),
		"LRU, never used first, ties by first detection; in-use, pinned and sandbox images are not candidates")
}

// TestImagesToFree checks the kubelet's freeSpace selection.
func TestImagesToFree(t *testing.T) {
	p := gc.DefaultImagePolicy() // MinAge 2m
	ordered := []gc.ImageRecord{
		img("a", 100, time.Hour, never),
		img("young", 1000, time.Minute, never), // first seen 1m ago < MinAge
		img("b", 100, time.Hour, 30*time.Minute),
		img("c", 100, time.Hour, 10*time.Minute),
		img("just-used", 100, time.Hour, 0), // last used now
	}
	for _, tc := range []struct {
		name   string
		toFree int64
		want   []string
	}{
		{"LRU order, stopping once enough is freed", 150, []string{"a", "b"}},
		{"exactly enough", 100, []string{"a"}},
		{"images younger than MinAge and images used now are skipped; all else if never enough", 10000, []string{"a", "b", "c"}},
		{"nothing to free", 0, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, imageIDs(gc.ImagesToFree(p, ordered, epoch, tc.toFree)))
		})
	}
	p.MinAge = 0
	assert.Equal(t, []string{"a", "young"}, imageIDs(gc.ImagesToFree(p, ordered, epoch, 1050)), "MinAge 0 skips none for age")
}

// TestOldImages checks the kubelet's freeOldImages (MaxAge).
func TestOldImages(t *testing.T) {
	p := gc.DefaultImagePolicy()
	ordered := []gc.ImageRecord{
		img("unused-2h", 1, 3*time.Hour, 2*time.Hour),
		img("unused-30m", 1, 3*time.Hour, 30*time.Minute),
		img("never-used-seen-2h", 1, 2*time.Hour, never),
		img("never-used-seen-10m", 1, 10*time.Minute, never),
	}
	began := epoch.Add(-24 * time.Hour)
	assert.Empty(t, gc.OldImages(p, ordered, epoch, began), "MaxAge 0 is off")
	p.MaxAge = time.Hour
	assert.Equal(t, []string{"unused-2h", "never-used-seen-2h"}, imageIDs(gc.OldImages(p, ordered, epoch, began)),
		"unused for longer than MaxAge; a never used image counts from its first detection")
	assert.Empty(t, gc.OldImages(p, ordered, epoch, epoch.Add(-time.Hour)),
		"nothing until MaxAge has passed since the GC began")
}

// TestBytesToFree checks the kubelet's threshold formula.
func TestBytesToFree(t *testing.T) {
	p := gc.DefaultImagePolicy()
	for _, tc := range []struct {
		name                string
		capacity, available int64
		usage               int
		toFree              int64
	}{
		{"below the high threshold: nothing", 1000, 200, 80, 0},
		{"usage is truncated: 15.1% available is 85% used", 1000, 151, 85, 49},
		{"at the high threshold: down to the low one", 1000, 150, 85, 50},
		{"90% full: capacity*(100-low)/100 - available", 1000, 100, 90, 100},
		{"full", 1000, 0, 100, 200},
		{"available above capacity is capped", 1000, 5000, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			usage, toFree := gc.BytesToFree(p, tc.capacity, tc.available)
			assert.Equal(t, tc.usage, usage, "usage")
			assert.Equal(t, tc.toFree, toFree, "to free")
		})
	}
}

func ExampleBytesToFree() {
	p := gc.DefaultImagePolicy()
	usage, toFree := gc.BytesToFree(p, 100<<30, 10<<30) // 100 GiB, 10 GiB available
	fmt.Printf("usage %d%%, free %d GiB\n", usage, toFree>>30)
	// Output: usage 90%, free 10 GiB
}
