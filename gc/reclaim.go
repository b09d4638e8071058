package gc

import "context"

// NodeReclaimer frees disk on demand with both collectors, as the
// kubelet's eviction manager does under disk pressure (eviction's
// NodeReclaimer): what each pass removed is logged by the caller's
// collectors; only the errors are returned. A nil collector does nothing.
type NodeReclaimer struct {
	Containers *ContainerGC
	Images     *ImageGC
}

// DeleteAllUnusedContainers runs Containers.DeleteAllUnusedContainers.
func (r NodeReclaimer) DeleteAllUnusedContainers(ctx context.Context) error {
	if r.Containers == nil {
		return nil
	}
	_, err := r.Containers.DeleteAllUnusedContainers(ctx)
	return err
}

// DeleteUnusedImages runs Images.DeleteUnusedImages.
func (r NodeReclaimer) DeleteUnusedImages(ctx context.Context) error {
	if r.Images == nil {
		return nil
	}
	_, err := r.Images.DeleteUnusedImages(ctx)
	return err
}
