package apiclient_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/volume/apiclient"
)

// The objects a node's configMap and secret volumes (and env) read.
func Example() {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data: map[string]string{"greeting": "hello"}})
	objs, err := apiclient.New(clientgo.Adapt(client))
	if err != nil {
		panic(err)
	}
	cm, _ := objs.GetConfigMap(ctx, "default", "cfg")
	fmt.Println(cm.Data["greeting"])
	_, err = objs.GetSecret(ctx, "default", "missing")
	fmt.Println(apierrors.IsNotFound(err))
	// Output:
	// hello
	// true
}
