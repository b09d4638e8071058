package kuberuntime

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

func TestUserNamespaceInSandboxAndContainerConfigs(t *testing.T) {
	no, yes := new(bool), new(bool)
	*yes = true
	mapping := UserNamespacesFunc(func(pod *v1.Pod, handler string) (uint32, uint32, error) {
		if handler != "runc" {
			return 0, 0, errors.New("wrong handler " + handler)
		}
		return 131072, 65536, nil
	})
	podIDs := []*runtimeapi.IDMapping{{HostId: 131072, ContainerId: 0, Length: 65536}}
	node := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	for _, tc := range []struct {
		name        string
		hostUsers   *bool
		userns      UserNamespaces
		want        *runtimeapi.UserNamespace
		wantMapping []*runtimeapi.IDMapping // on every mount
		wantErr     string
	}{
		{name: "host users unset", want: node},
		{name: "host users true", hostUsers: yes, userns: mapping, want: node},
		{name: "host users false", hostUsers: no, userns: mapping,
			want:        &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: podIDs, Gids: podIDs},
			wantMapping: podIDs},
		{name: "no manager", hostUsers: no, wantErr: "can't set `spec.hostUsers: false`: no user namespace manager"},
		{name: "manager refuses", hostUsers: no, userns: UserNamespacesFunc(func(*v1.Pod, string) (uint32, uint32, error) {
			return 0, 0, errors.New("can't set `spec.hostUsers: false`, runtime does not support user namespaces")
		}), wantErr: "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewManager(ManagerConfig{Runtime: struct{ RuntimeService }{}, Images: struct{ ImageService }{},
				DNS: HostDNS("", nil, ""), PodLogsDir: t.TempDir(), RuntimeHandler: "runc", UserNamespaces: tc.userns})
			require.NoError(t, err)
			pod := webPod()
			pod.Spec.HostUsers = tc.hostUsers
			sb, err := m.SandboxConfig(pod, 0, "")
			mounts := []kc.Mount{{ContainerPath: "/data", HostPath: "/var/lib/data"}, {Name: "img", ContainerPath: "/img", Image: "sha256:1"}}
			cc, cerr := m.ContainerConfig(pod, &pod.Spec.Containers[0], ContainerInput{Mounts: mounts})
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.ErrorContains(t, cerr, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, cerr)
			assert.Equal(t, tc.want, sb.Linux.SecurityContext.NamespaceOptions.UsernsOptions)
			assert.Equal(t, tc.want, cc.Linux.SecurityContext.NamespaceOptions.UsernsOptions, "the containers join the pod's")
			require.Len(t, cc.Mounts, 2)
			for _, mt := range cc.Mounts {
				assert.Equal(t, tc.wantMapping, mt.UidMappings, mt.ContainerPath)
				assert.Equal(t, tc.wantMapping, mt.GidMappings, mt.ContainerPath)
			}
		})
	}
}

func TestHandlerSupportsUserNamespaces(t *testing.T) {
	status := &runtimeapi.StatusResponse{RuntimeHandlers: []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
		{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
		{Name: "kata", Features: &runtimeapi.RuntimeHandlerFeatures{}},
		{Name: "bare"},
	}}
	for _, tc := range []struct {
		name    string
		status  *runtimeapi.StatusResponse
		handler string
		want    bool
		wantErr string
	}{
		{name: "default handler", status: status, want: true},
		{name: "named handler", status: status, handler: "runc", want: true},
		{name: "handler without the feature", status: status, handler: "kata"},
		{name: "handler without features", status: status, handler: "bare"},
		{name: "unknown handler", status: status, handler: "gone", wantErr: `the handler "gone" is not known`},
		{name: "runtime lists no handlers", status: &runtimeapi.StatusResponse{}, handler: "gone"},
		{name: "no status", handler: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HandlerSupportsUserNamespaces(tc.status, tc.handler)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
