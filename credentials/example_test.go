package credentials_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/credentials"
)

// A pod's pull secret gives the credentials for the images of its
// registry, the longest matching key first.
func Example() {
	secret := v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "default"},
		Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example.com":{"username":"ci","password":"s3cret"}}}`)}}
	keyring, err := credentials.NewKeyring([]v1.Secret{secret})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, image := range []string{"registry.example.com/team/app:1.0", "docker.io/library/busybox"} {
		creds, err := keyring.Lookup(image)
		fmt.Println(image, len(creds), err)
		for _, c := range creds {
			fmt.Println(" ", c.Username, c.Secret)
		}
	}
	// Output:
	// registry.example.com/team/app:1.0 1 <nil>
	//   ci default/regcred
	// docker.io/library/busybox 0 <nil>
}
