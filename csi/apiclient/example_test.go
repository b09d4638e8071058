package apiclient_test

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/csi/apiclient"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

// Whether a driver needs attaching is its CSIDriver's attachRequired.
func Example() {
	ctx := context.Background()
	objs, _ := apiclient.New(clientgo.Adapt(fake.NewClientset(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io"},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}})))
	d, _ := objs.GetCSIDriver(ctx, "hostpath.csi.k8s.io")
	fmt.Println(*d.Spec.AttachRequired)
	_, err := objs.GetVolumeAttachment(ctx, "csi-0123")
	fmt.Println(apierrors.IsNotFound(err))
	// Output:
	// false
	// true
}
