package kubeapi

import (
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// NewScheme returns a scheme of the groups a Clientset speaks: core/v1,
// coordination/v1, storage/v1, authentication/v1 and authorization/v1,
// with meta/v1's options in each.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1.AddToScheme, coordinationv1.AddToScheme,
		storagev1.AddToScheme, authenticationv1.AddToScheme, authorizationv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registrations: a failure is a programming error
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// Codecs are a scheme of NewScheme's groups and its codecs, what a
// Clientset encodes and decodes with. Clientsets of many agents in one
// process (hollow nodes) share one through WithCodecs, as client-go's
// clientsets share its scheme: each is a few hundred kilobytes.
type Codecs struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	params runtime.ParameterCodec
}

// NewCodecs builds a scheme of NewScheme's groups and its codecs.
func NewCodecs() *Codecs {
	s := NewScheme()
	return &Codecs{scheme: s, codecs: serializer.NewCodecFactory(s), params: runtime.NewParameterCodec(s)}
}

// Scheme is the codecs' scheme: the kinds a Clientset on them knows.
func (c *Codecs) Scheme() *runtime.Scheme { return c.scheme }

// Option configures New.
type Option func(*options)

type options struct{ codecs *Codecs }

// WithCodecs makes the Clientset use c instead of codecs of its own.
func WithCodecs(c *Codecs) Option { return func(o *options) { o.codecs = c } }

// Clientset reaches the API server's core/v1, coordination/v1, storage/v1,
// authentication/v1 and authorization/v1 groups.
type Clientset struct {
	core, coordination, storage, authentication, authorization rest.Interface
	params                                                     runtime.ParameterCodec
}

// New returns a Clientset for cfg (server, identity, content types, rate
// limits: one limiter from QPS and Burst for all groups, as client-go's
// clientset) over httpClient, which carries cfg's transport
// (rest.HTTPClientFor makes one).
func New(cfg *rest.Config, httpClient *http.Client, opts ...Option) (*Clientset, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.codecs == nil {
		o.codecs = NewCodecs()
	}
	if cfg == nil || httpClient == nil {
		return nil, fmt.Errorf("kubeapi: New: a rest.Config and an http.Client are required")
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		// One limiter for every group, as client-go's clientset: QPS and
		// Burst are the client's, not each group's.
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("kubeapi: New: Burst must be positive with QPS %v and no RateLimiter", cfg.QPS)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	cs := &Clientset{params: o.codecs.params}
	for _, g := range []struct {
		gv   schema.GroupVersion
		path string
		into *rest.Interface
	}{
		{v1.SchemeGroupVersion, "/api", &cs.core},
		{coordinationv1.SchemeGroupVersion, "/apis", &cs.coordination},
		{storagev1.SchemeGroupVersion, "/apis", &cs.storage},
		{authenticationv1.SchemeGroupVersion, "/apis", &cs.authentication},
		{authorizationv1.SchemeGroupVersion, "/apis", &cs.authorization},
	} {
		c := rest.CopyConfig(cfg)
		gv := g.gv
		c.GroupVersion, c.APIPath = &gv, g.path
		c.NegotiatedSerializer = o.codecs.codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
		if err != nil {
			return nil, fmt.Errorf("kubeapi: %s client: %w", gv, err)
		}
		*g.into = rc
	}
	return cs, nil
}

// Pods in namespace.
func (cs *Clientset) Pods(namespace string) StatusClient[*v1.Pod, *v1.PodList] {
	return newResource[v1.Pod, v1.PodList](cs, cs.core, "pods", namespace)
}

// Nodes.
func (cs *Clientset) Nodes() StatusClient[*v1.Node, *v1.NodeList] {
	return newResource[v1.Node, v1.NodeList](cs, cs.core, "nodes", "")
}

// Events in namespace (core/v1 Events, as the kubelet's recorder writes).
func (cs *Clientset) Events(namespace string) Client[*v1.Event, *v1.EventList] {
	return newResource[v1.Event, v1.EventList](cs, cs.core, "events", namespace)
}

// Secrets in namespace.
func (cs *Clientset) Secrets(namespace string) Client[*v1.Secret, *v1.SecretList] {
	return newResource[v1.Secret, v1.SecretList](cs, cs.core, "secrets", namespace)
}

// ConfigMaps in namespace.
func (cs *Clientset) ConfigMaps(namespace string) Client[*v1.ConfigMap, *v1.ConfigMapList] {
	return newResource[v1.ConfigMap, v1.ConfigMapList](cs, cs.core, "configmaps", namespace)
}

// Services in namespace ("" for all).
func (cs *Clientset) Services(namespace string) StatusClient[*v1.Service, *v1.ServiceList] {
	return newResource[v1.Service, v1.ServiceList](cs, cs.core, "services", namespace)
}

// PersistentVolumeClaims in namespace.
func (cs *Clientset) PersistentVolumeClaims(namespace string) StatusClient[*v1.PersistentVolumeClaim, *v1.PersistentVolumeClaimList] {
	return newResource[v1.PersistentVolumeClaim, v1.PersistentVolumeClaimList](cs, cs.core, "persistentvolumeclaims", namespace)
}

// PersistentVolumes.
func (cs *Clientset) PersistentVolumes() StatusClient[*v1.PersistentVolume, *v1.PersistentVolumeList] {
	return newResource[v1.PersistentVolume, v1.PersistentVolumeList](cs, cs.core, "persistentvolumes", "")
}

// ServiceAccounts in namespace; their tokens come from CreateToken.
func (cs *Clientset) ServiceAccounts(namespace string) ServiceAccountClient {
	return serviceAccounts{newResource[v1.ServiceAccount, v1.ServiceAccountList](cs, cs.core, "serviceaccounts", namespace)}
}

// Leases in namespace (the node's heartbeat, in kube-node-lease).
func (cs *Clientset) Leases(namespace string) Client[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return newResource[coordinationv1.Lease, coordinationv1.LeaseList](cs, cs.coordination, "leases", namespace)
}

// CSINodes.
func (cs *Clientset) CSINodes() Client[*storagev1.CSINode, *storagev1.CSINodeList] {
	return newResource[storagev1.CSINode, storagev1.CSINodeList](cs, cs.storage, "csinodes", "")
}

// CSIDrivers.
func (cs *Clientset) CSIDrivers() Client[*storagev1.CSIDriver, *storagev1.CSIDriverList] {
	return newResource[storagev1.CSIDriver, storagev1.CSIDriverList](cs, cs.storage, "csidrivers", "")
}

// VolumeAttachments.
func (cs *Clientset) VolumeAttachments() StatusClient[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList] {
	return newResource[storagev1.VolumeAttachment, storagev1.VolumeAttachmentList](cs, cs.storage, "volumeattachments", "")
}

// TokenReviews: the secured API's bearer-token authentication.
func (cs *Clientset) TokenReviews() Creator[*authenticationv1.TokenReview] {
	return newCreator[authenticationv1.TokenReview](cs, cs.authentication, "tokenreviews")
}

// SubjectAccessReviews: the secured API's authorization.
func (cs *Clientset) SubjectAccessReviews() Creator[*authorizationv1.SubjectAccessReview] {
	return newCreator[authorizationv1.SubjectAccessReview](cs, cs.authorization, "subjectaccessreviews")
}

var _ Interface = (*Clientset)(nil)
