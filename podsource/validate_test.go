package podsource

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestParseErrors(t *testing.T) {
	pod := func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n" + spec
	}
	uidPod := func(uid string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: " + uid + "}\nspec: {containers: [{name: c, image: i}]}\n"
	}
	tests := []struct {
		name   string
		data   string
		strict bool
		list   bool
		// want are substrings of the error, in order: field paths and values.
		want []string
	}{
		{"not yaml", "a: [b", false, false, []string{"/m/x.yaml", "yaml"}},
		{"no apiVersion", "kind: Pod\nmetadata: {name: a}\n", false, false, []string{"apiVersion: Required value"}},
		{"wrong kind", "apiVersion: v1\nkind: Service\n", false, false, []string{`kind: Unsupported value: "Service"`}},
		{"list not allowed", "apiVersion: v1\nkind: PodList\nitems: []\n", false, false, []string{`kind: Unsupported value: "PodList"`}},
		{"no name", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n", false, false, []string{"metadata.name: Required value"}},
		{"name not DNS-1123", "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\nspec: {containers: [{name: c, image: i}]}\n", false, false,
			[]string{`metadata.name: Invalid value: "Web_1-node-1"`, "RFC 1123"}},
		{"bad namespace", "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: Kube.System}\nspec: {containers: [{name: c, image: i}]}\n", false, false,
			[]string{`metadata.namespace: Invalid value: "Kube.System"`}},
		{"bad label", "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {'a b': x}}\nspec: {containers: [{name: c, image: i}]}\n", false, false,
			[]string{`metadata.labels: Invalid value: "a b"`}},
		{"no containers", pod("  containers: []\n"), false, false, []string{"spec.containers: Required value"}},
		{"pull secrets", pod("  imagePullSecrets: [{name: ''}, {name: regcred}]\n  containers: [{name: c, image: i}]\n"), false, false,
			[]string{"spec.imagePullSecrets[1]: Forbidden: static pods may not reference secrets"}},
		{"duplicate container", pod("  containers: [{name: c, image: i}, {name: c, image: j}]\n"), false, false,
			[]string{`spec.containers[1].name: Duplicate value: "c"`}},
		{"init and app container clash", pod("  initContainers: [{name: c, image: i}]\n  containers: [{name: c, image: j}]\n"), false, false,
			[]string{`spec.containers[0].name: Duplicate value: "c"`}},
		{"container name", pod("  containers: [{name: C_1, image: i}]\n"), false, false, []string{`spec.containers[0].name: Invalid value: "C_1"`}},
		{"missing image", pod("  containers: [{name: c}]\n"), false, false, []string{"spec.containers[0].image: Required value"}},
		{"port out of range", pod("  containers: [{name: c, image: i, ports: [{containerPort: 70000}]}]\n"), false, false,
			[]string{"spec.containers[0].ports[0].containerPort: Invalid value: 70000"}},
		{"port zero", pod("  containers: [{name: c, image: i, ports: [{containerPort: 0}]}]\n"), false, false,
			[]string{"spec.containers[0].ports[0].containerPort: Invalid value: 0"}},
		{"bad protocol", pod("  containers: [{name: c, image: i, ports: [{containerPort: 80, protocol: HTTP}]}]\n"), false, false,
			[]string{`spec.containers[0].ports[0].protocol: Unsupported value: "HTTP"`}},
		{"bad host port", pod("  containers: [{name: c, image: i, ports: [{containerPort: 80, hostPort: -1}]}]\n"), false, false,
			[]string{"spec.containers[0].ports[0].hostPort: Invalid value: -1"}},
		{"mount of unknown volume", pod("  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v}]}]\n"), false, false,
			[]string{`spec.containers[0].volumeMounts[0].name: Not found: "v"`}},
		{"request over limit", pod("  containers: [{name: c, image: i, resources: {limits: {cpu: 1}, requests: {cpu: 2}}}]\n"), false, false,
			[]string{`spec.containers[0].resources.requests[cpu]: Invalid value: "2"`}},
		{"host users false and host network", pod("  hostUsers: false\n  hostNetwork: true\n  containers: [{name: c, image: i}]\n"), false, false,
			[]string{"spec.hostNetwork: Forbidden: when `hostUsers` is false"}},
		{"host users false and host pid and ipc", pod("  hostUsers: false\n  hostPID: true\n  hostIPC: true\n  containers: [{name: c, image: i}]\n"), false, false,
			[]string{"spec.HostPID: Forbidden: when `hostUsers` is false", "spec.HostIPC: Forbidden: when `hostUsers` is false"}},
		{"host users false and volume devices", pod("  hostUsers: false\n  volumes: [{name: v, emptyDir: {}}]\n  initContainers: [{name: i, image: i}]\n  containers: [{name: c, image: i, volumeDevices: [{name: v, devicePath: /dev/v}]}]\n"), false, false,
			[]string{"spec.containers[0].volumeDevices: Forbidden: when `hostUsers` is false"}},
		{"unmasked proc with host users", pod("  containers: [{name: c, image: i, securityContext: {procMount: Unmasked}}]\n"), false, false,
			[]string{"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"}},
		{"env name with = (relaxed names allow the rest)", pod("  containers: [{name: c, image: i, env: [{name: '1-$@x', value: a}, {name: 'a=b', value: c}]}]\n"), false, false,
			[]string{`spec.containers[0].env[1].name: Invalid value: "a=b"`}},
		{"bad restart policy", pod("  restartPolicy: Sometimes\n  containers: [{name: c, image: i}]\n"), false, false,
			[]string{`spec.restartPolicy: Unsupported value: "Sometimes"`}},
		{"probe without handler", pod("  containers: [{name: c, image: i, livenessProbe: {periodSeconds: 5}}]\n"), false, false,
			[]string{"spec.containers[0].livenessProbe"}},
		{"type error", pod("  containers: [{name: c, image: i, ports: [{containerPort: eighty}]}]\n"), false, false,
			[]string{"/m/x.yaml", "containerPort"}},
		{"unknown field, strict", pod("  containers: [{name: c, image: i, imagee: j}]\n"), true, false,
			[]string{`spec.containers[0].imagee: Forbidden: unknown field`}},
		{"duplicate field, strict", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\nspec: {}\n", true, false,
			[]string{"/m/x.yaml", "spec"}},
		// A node puts metadata.uid, namespace and name in paths: none of them may reach outside.
		{"uid climbs out", uidPod("../../victim"), false, false, []string{`metadata.uid: Invalid value: "../../victim"`, "a pod UID must consist of"}},
		{"uid is ..", uidPod(".."), false, false, []string{`metadata.uid: Invalid value: ".."`}},
		{"uid is .", uidPod("."), false, false, []string{`metadata.uid: Invalid value: "."`}},
		{"uid with slash", uidPod("a/b"), false, false, []string{`metadata.uid: Invalid value: "a/b"`}},
		{"uid with underscore", uidPod("a_b"), false, false, []string{`metadata.uid: Invalid value: "a_b"`}},
		{"uid with NUL", uidPod(`"a\0b"`), false, false, []string{`metadata.uid: Invalid value: "a\x00b"`}},
		{"uid of 2000 characters", uidPod(strings.Repeat("u", 2000)), false, false,
			[]string{`metadata.uid: Invalid value: "uuuu`, "(2000 bytes): must be no more than 128 characters"}},
		{"log directory name too long", "apiVersion: v1\nkind: Pod\nmetadata: {name: " + strings.Repeat("a", 200) + ", namespace: " + strings.Repeat("n", 50) +
			"}\nspec: {containers: [{name: c, image: i}]}\n", false, false,
			[]string{"metadata.name: Invalid value", "would be 291 bytes, over the 255 a file name may have"}},
		{"subPath climbs out", pod("  volumes: [{name: v, emptyDir: {}}]\n  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: a/../../x}]}]\n"), false, false,
			[]string{`spec.containers[0].volumeMounts[0].subPath: Invalid value: "a/../../x": must not contain '..'`}},
		{"subPath absolute", pod("  volumes: [{name: v, emptyDir: {}}]\n  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: /etc}]}]\n"), false, false,
			[]string{`spec.containers[0].volumeMounts[0].subPath: Invalid value: "/etc": must be a relative path`}},
		{"hostPath with ..", pod("  volumes: [{name: v, hostPath: {path: /srv/../etc}}]\n  containers: [{name: c, image: i}]\n"), false, false,
			[]string{`spec.volumes[0].hostPath.path: Invalid value: "/srv/../etc": must not contain '..'`}},
		{"image volume without reference", pod("  volumes: [{name: v, image: {pullPolicy: Never}}]\n  containers: [{name: c, image: i}]\n"), false, false,
			[]string{`spec.volumes[0].image.reference: Required value`}},
		{"image volume pull policy", pod("  volumes: [{name: v, image: {reference: r, pullPolicy: Sometimes}}]\n  containers: [{name: c, image: i}]\n"), false, false,
			[]string{`spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes"`}},
		{"volume name climbs out", pod("  volumes: [{name: ../x, emptyDir: {}}]\n  containers: [{name: c, image: i}]\n"), false, false,
			[]string{`spec.volumes[0].name: Invalid value: "../x"`}},
		{"container name climbs out", pod("  containers: [{name: ../../x, image: i}]\n"), false, false,
			[]string{`spec.containers[0].name: Invalid value: "../../x"`}},
		{"namespace climbs out", "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ../../x}\nspec: {containers: [{name: c, image: i}]}\n", false, false,
			[]string{`metadata.namespace: Invalid value: "../../x"`}},
		{"list item error path", "apiVersion: v1\nkind: PodList\nitems:\n- {metadata: {name: a}, spec: {containers: [{name: c}]}}\n", false, true,
			[]string{"items[0].spec.containers[0].image: Required value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := Parse([]byte(tt.data), ParseOptions{Kind: SourceFile, Origin: "/m/x.yaml", NodeName: node, Strict: tt.strict, AllowList: tt.list})
			if err == nil {
				require.Len(t, ps, 1)
				require.NotNil(t, ps[0].Err, "expected an error")
				assert.Nil(t, ps[0].Pod)
				err = ps[0].Err
			}
			var me *ManifestError
			require.True(t, errors.As(err, &me))
			assert.Equal(t, "/m/x.yaml", me.Origin)
			msg := err.Error()
			assert.Contains(t, msg, "/m/x.yaml")
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if !assert.GreaterOrEqual(t, i, 0, "%q not in %q", w, msg) {
					return
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestParseUnknownFieldIgnoredWhenNotStrict(t *testing.T) {
	ps, err := Parse([]byte(manifest("a", "i")+"    imagee: j\n"), ParseOptions{Kind: SourceFile, Origin: "/m/a", NodeName: node})
	require.NoError(t, err)
	require.Nil(t, ps[0].Err)
}

func TestParseListKeepsGoodItems(t *testing.T) {
	ps, err := Parse([]byte(`{"apiVersion":"v1","kind":"PodList","items":[
	 {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}},
	 {"metadata":{"name":"b"},"spec":{"containers":[{"name":"c"}]}},
	 {"metadata":{"name":"c","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}`),
		ParseOptions{Kind: SourceHTTP, Origin: "http://h/p", NodeName: node, AllowList: true})
	require.NoError(t, err)
	require.Len(t, ps, 3)
	assert.NotNil(t, ps[0].Pod)
	assert.NotNil(t, ps[1].Err)
	assert.Equal(t, "default/b", ps[1].Key)
	assert.Equal(t, "ns/c", ps[2].Key)
	assert.Equal(t, "c-node-1", ps[2].Pod.Name)
}

func TestValidatePodAcceptsUserNamespaces(t *testing.T) {
	no := false
	for _, spec := range []v1.PodSpec{
		{HostUsers: &no, Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{Name: "c", Image: "i", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/v"}},
				SecurityContext: &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}}}},
		{HostNetwork: true, HostPID: true, HostIPC: true, Containers: []v1.Container{{Name: "c", Image: "i"}}},
	} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"}, Spec: spec}
		SetAPIDefaults(pod)
		assert.Empty(t, ValidatePod(pod))
	}
}
