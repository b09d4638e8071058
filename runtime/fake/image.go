package fake

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// image is one image ID and the references that point at it.
type image struct {
	id   string
	refs []string // normalized
	msg  *runtimeapi.Image
}

// refresh rebuilds the immutable message after refs changed.
func (im *image) refresh() {
	var tags, digests []string
	for _, ref := range im.refs {
		if name, digest, ok := strings.Cut(ref, "@"); ok {
			if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
				name = name[:i]
			}
			digests = append(digests, name+"@"+digest)
			continue
		}
		tags = append(tags, ref)
	}
	im.msg = &runtimeapi.Image{Id: im.id, RepoTags: tags, RepoDigests: digests, Size: imageSize(im.id)}
}

// pullRule scripts PullImage for one reference.
type pullRule struct {
	delay time.Duration
	err   error
}

// addImageLocked makes ref present, under the ID derived from it.
func (r *Runtime) addImageLocked(ref string) error {
	n, err := normalizeRef(ref)
	if err != nil {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	r.tagLocked(n, imageIDFor(n))
	return nil
}

// tagLocked points the normalized reference n at image id, creating it.
func (r *Runtime) tagLocked(n, id string) *image {
	if old, ok := r.st.imageRefs[n]; ok {
		if old.id == id {
			return old
		}
		r.untagLocked(old, n)
	}
	im, ok := r.st.images[id]
	if !ok {
		im = &image{id: id}
		r.st.images[id] = im
	}
	im.refs = append(im.refs, n)
	im.refresh()
	r.st.imageRefs[n] = im
	r.imagesChangedLocked(id)
	return im
}

// untagLocked removes reference n from im; an image left without
// references is gone, as in containerd's CRI image store.
func (r *Runtime) untagLocked(im *image, n string) {
	delete(r.st.imageRefs, n)
	refs := im.refs[:0:0]
	for _, ref := range im.refs {
		if ref != n {
			refs = append(refs, ref)
		}
	}
	im.refs = refs
	if len(refs) == 0 {
		delete(r.st.images, im.id)
	} else {
		im.refresh()
	}
	r.imagesChangedLocked(im.id)
}

// imagesChangedLocked drops the image list and refreshes containers of
// image id, whose status reports the image's first tag while it exists.
func (r *Runtime) imagesChangedLocked(id string) {
	r.imageList.Store(nil)
	for _, c := range r.st.containerOrder {
		if c.imageID == id {
			r.refreshContainerLocked(c)
		}
	}
}

// resolveImageLocked finds an image by reference (short or full) or ID,
// like containerd's localResolve.
func (r *Runtime) resolveImageLocked(refOrID string) *image {
	if isImageID(refOrID) {
		return r.st.images[refOrID]
	}
	n, err := normalizeRef(refOrID)
	if err != nil {
		return r.st.images[refOrID]
	}
	return r.st.imageRefs[n]
}

// ListImages lists all images. Like containerd 1.6, it ignores the filter.
func (r *Runtime) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	if err := r.enter(ctx, mListImages); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &runtimeapi.ListImagesResponse{Images: r.imagesLocked()}, nil
}

func (r *Runtime) imagesLocked() []*runtimeapi.Image {
	if l := r.imageList.Load(); l != nil {
		return *l
	}
	l := make([]*runtimeapi.Image, 0, len(r.st.images))
	seen := make(map[*image]bool, len(r.st.images))
	// Walk references in a stable order so lists do not shuffle.
	for _, ref := range sortedKeys(r.st.imageRefs) {
		im := r.st.imageRefs[ref]
		if !seen[im] {
			seen[im] = true
			l = append(l, im.msg)
		}
	}
	l = l[:len(l):len(l)]
	r.imageList.Store(&l)
	return l
}

// ImageStatus returns the image, or no image and no error when it is not
// present (containerd's answer, which kubelet relies on).
func (r *Runtime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	if err := r.enter(ctx, mImageStatus); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	im := r.resolveImageLocked(req.GetImage().GetImage())
	if im == nil {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: im.msg}, nil
}

// PullImage returns the ID of a present image at once; otherwise only
// references allowed by AllowPull or SetPullBehavior can be pulled.
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	if err := r.enter(ctx, mPullImage); err != nil {
		return nil, err
	}
	ref := req.GetImage().GetImage()
	n, err := normalizeRef(ref)
	if err != nil {
		return nil, status.Errorf(codes.Unknown, "failed to parse image reference %q: %v", ref, err)
	}
	r.mu.RLock()
	im, present := r.st.imageRefs[n]
	rule, pullable := r.st.pulls[n]
	r.mu.RUnlock()
	if present {
		return &runtimeapi.PullImageResponse{ImageRef: im.id}, nil
	}
	if !pullable && !r.pullAny {
		return nil, status.Errorf(codes.NotFound,
			"failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", n, n, n)
	}
	if err := r.sleep(ctx, rule.delay); err != nil {
		return nil, err
	}
	if rule.err != nil {
		return nil, rule.err
	}
	r.mu.Lock()
	im = r.tagLocked(n, imageIDFor(n))
	r.mu.Unlock()
	return &runtimeapi.PullImageResponse{ImageRef: im.id}, nil
}

// RemoveImage removes the image and every reference to it. Removing an
// absent image succeeds.
func (r *Runtime) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	if err := r.enter(ctx, mRemoveImage); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if im := r.resolveImageLocked(req.GetImage().GetImage()); im != nil {
		for _, ref := range append([]string(nil), im.refs...) {
			r.untagLocked(im, ref)
		}
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo returns what SetImageFsInfo set, or one filesystem holding
// all images, at the mountpoint WithImageFsMountpoint set.
//
// Images take no disk: their sizes are made up from their IDs, and the
// filesystem's used bytes add up those sizes. Its mountpoint is on this
// machine (os.TempDir() by default), where containers' writable layers are
// too: consumers that statfs it for capacity, as the kubelet's image GC and
// Summary API do with containerd's snapshotter directory, then work
// unchanged, and see that filesystem's capacity and free space.
func (r *Runtime) ImageFsInfo(ctx context.Context, req *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	if err := r.enter(ctx, mImageFsInfo); err != nil {
		return nil, err
	}
	now := nanos(r.clock.Now())
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.st.imageFs != nil {
		return r.st.imageFs, nil
	}
	var used uint64
	for _, im := range r.st.images {
		used += im.msg.Size
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp:  now,
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: r.imageFs},
		UsedBytes:  &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: uint64(len(r.st.images))},
	}}}, nil
}

// LoadImages makes images present, as if imported.
func (r *Runtime) LoadImages(refs ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ref := range refs {
		if err := r.addImageLocked(ref); err != nil {
			return err
		}
	}
	return nil
}

// TagImage adds reference newRef to the image existingRef (a reference or
// ID) resolves to, so that one ID has several tags.
func (r *Runtime) TagImage(existingRef, newRef string) error {
	n, err := normalizeRef(newRef)
	if err != nil {
		return fmt.Errorf("image %q: %w", newRef, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	im := r.resolveImageLocked(existingRef)
	if im == nil {
		return fmt.Errorf("image %q: not found", existingRef)
	}
	r.tagLocked(n, im.id)
	return nil
}

// AllowPull lets PullImage fetch refs at once.
func (r *Runtime) AllowPull(refs ...string) {
	for _, ref := range refs {
		r.SetPullBehavior(ref, 0, nil)
	}
}

// SetPullBehavior makes pulling ref take delay on the injected clock and
// then fail with err as-is, or succeed when err is nil.
func (r *Runtime) SetPullBehavior(ref string, delay time.Duration, err error) {
	n, nerr := normalizeRef(ref)
	if nerr != nil {
		n = ref
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.pulls[n] = pullRule{delay: delay, err: err}
}

// SetImageFsInfo fixes the ImageFsInfo answer; nil restores the default.
func (r *Runtime) SetImageFsInfo(resp *runtimeapi.ImageFsInfoResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.imageFs = resp
}

// SetBehavior sets what containers of imageRef created from now on do.
func (r *Runtime) SetBehavior(imageRef string, b Behavior) error {
	n, err := normalizeRef(imageRef)
	if err != nil {
		return fmt.Errorf("image %q: %w", imageRef, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.behaviors[imageIDFor(n)] = b
	return nil
}
