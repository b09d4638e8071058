package kuberuntime

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func service(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

// kubelet getServiceEnvVarMap and envvars.FromServices: the master service
// always, the pod's namespace's services unless enableServiceLinks is
// false, none without a cluster IP; the container's own variables win and
// may use the services' in $(VAR). Upstream e2e: "Pods should contain
// environment variables for services".
func TestServiceEnv(t *testing.T) {
	services := ServicesFunc(func() ([]*v1.Service, error) {
		return []*v1.Service{
			service("default", "kubernetes", "10.0.0.1", v1.ServicePort{Name: "https", Port: 443}),
			service("ns", "fooservice", "10.0.0.2", v1.ServicePort{Port: 8765}),
			service("ns", "my-db", "10.0.0.3", v1.ServicePort{Name: "sql", Port: 5432},
				v1.ServicePort{Name: "dns-udp", Port: 53, Protocol: v1.ProtocolUDP}),
			service("ns", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
			service("other", "elsewhere", "10.0.0.9", v1.ServicePort{Port: 80}),
		}, nil
	})
	kubernetes := map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": "tcp://10.0.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.0.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.0.0.1"}
	links := map[string]string{"FOOSERVICE_SERVICE_HOST": "10.0.0.2", "FOOSERVICE_SERVICE_PORT": "8765",
		"FOOSERVICE_PORT": "tcp://10.0.0.2:8765", "FOOSERVICE_PORT_8765_TCP": "tcp://10.0.0.2:8765",
		"FOOSERVICE_PORT_8765_TCP_PROTO": "tcp", "FOOSERVICE_PORT_8765_TCP_PORT": "8765", "FOOSERVICE_PORT_8765_TCP_ADDR": "10.0.0.2",
		"MY_DB_SERVICE_HOST": "10.0.0.3", "MY_DB_SERVICE_PORT": "5432", "MY_DB_SERVICE_PORT_SQL": "5432",
		"MY_DB_SERVICE_PORT_DNS_UDP": "53", "MY_DB_PORT": "tcp://10.0.0.3:5432",
		"MY_DB_PORT_5432_TCP": "tcp://10.0.0.3:5432", "MY_DB_PORT_5432_TCP_PROTO": "tcp", "MY_DB_PORT_5432_TCP_PORT": "5432",
		"MY_DB_PORT_5432_TCP_ADDR": "10.0.0.3", "MY_DB_PORT_53_UDP": "udp://10.0.0.3:53", "MY_DB_PORT_53_UDP_PROTO": "udp",
		"MY_DB_PORT_53_UDP_PORT": "53", "MY_DB_PORT_53_UDP_ADDR": "10.0.0.3"}
	merged := map[string]string{}
	for _, m := range []map[string]string{kubernetes, links} {
		for k, v := range m {
			merged[k] = v
		}
	}
	for _, tc := range []struct {
		name  string
		links *bool
		want  map[string]string
	}{
		{"enableServiceLinks unset (true)", nil, merged},
		{"enableServiceLinks false: the master service only", ptr.To(false), kubernetes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{EnableServiceLinks: tc.links}}
			got, err := serviceEnv(pod, services)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	c := &v1.Container{Env: []v1.EnvVar{{Name: "FOOSERVICE_SERVICE_HOST", Value: "mine"},
		{Name: "DB", Value: "$(MY_DB_SERVICE_HOST):$(MY_DB_SERVICE_PORT)"}}}
	env, err := containerEnv(pod, c, nil, "", nil, nil, services)
	require.NoError(t, err)
	assert.Equal(t, []v1.EnvVar{{Name: "FOOSERVICE_SERVICE_HOST", Value: "mine"}, {Name: "DB", Value: "10.0.0.3:5432"}}, env[:2],
		"the container's own first, expanded with the services'")
	assert.Len(t, env, 2+len(merged)-1, "then every service variable it does not set")

	_, err = containerEnv(pod, c, nil, "", nil, nil, ServicesFunc(func() ([]*v1.Service, error) {
		return nil, errors.New("services have not yet been read at least once")
	}))
	assert.ErrorContains(t, err, "services for the environment: services have not yet been read at least once")
}
