package nodekit_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/nodekit-dev/nodekit"

// Heavy modules that only some packages may compile.
const (
	grpc       = "google.golang.org/grpc"
	criAPI     = "k8s.io/cri-api"
	prometheus = "github.com/prometheus/client_golang"
	containerd = "github.com/containerd/cgroups/v3"
	clientGo   = "k8s.io/client-go"
)

// Nodekit packages some packages must not compile either.
const kuberuntimePkg = module + "/kuberuntime"

// TestPackageDependencies keeps each package's imports to what its job
// needs: the nodekit packages it may use, the heavy modules (or nodekit
// packages) it must not compile, and a budget of modules (k8s.io/api with apimachinery alone are
// 18). A package that gains a dependency fails here; raise its budget only
// on purpose, in the same change that explains why.
func TestPackageDependencies(t *testing.T) {
	light := []string{grpc, criAPI, prometheus, containerd, clientGo}
	for _, tc := range []struct {
		pkg       string
		siblings  []string
		forbidden []string
		modules   int
	}{
		{"kubecontainer", nil, light, 19},
		{"resources", nil, light, 18},
		{"statuscache", []string{"kubecontainer"}, light, 19},
		{"pleg", []string{"kubecontainer"}, light, 19},
		{"podstatus", []string{"internal/smpdiff", "kubecontainer", "resources"}, light, 19},
		// In-place resize's allocation manager: no runtime, no client-go.
		{"allocation", []string{"resources"}, light, 22},
		{"podworkers", []string{"kubecontainer"}, light, 19},
		{"fieldpath", nil, light, 18},
		// k8s.io/kubelet for the Summary API's VolumeStats (PodVolumeStats).
		{"volume", []string{"fieldpath", "internal/fsstats", "kubecontainer", "podpath"}, light, 22},
		{"podpath", nil, light, 4},
		// The pods' user namespaces: pod directories from podpath, no CRI.
		{"userns", []string{"podpath"}, light, 18},
		{"prober/probe", nil, []string{criAPI, prometheus, containerd, clientGo}, 6},
		{"pleg/plegmetrics", []string{"kubecontainer", "pleg"}, []string{grpc, criAPI, containerd, clientGo}, 28},
		{"prober", []string{"kubecontainer", "prober/probe"}, []string{criAPI, containerd, clientGo}, 30},
		{"podsource", []string{"podpath"}, []string{grpc, criAPI, containerd, clientGo}, 29},
		{"podstartup", nil, []string{grpc, criAPI, containerd, clientGo}, 28},
		{"podsource/apiserver", []string{"kubeapi", "podpath", "podsource"}, []string{grpc, criAPI, containerd, "k8s.io/client-go/kubernetes"}, 35},
		// The API client without client-go's typed clientset: its rest client and
		// six groups' types; not the scheme of every group, nor discovery's
		// OpenAPI (gnostic) (#34).
		{"kubeapi", nil, []string{grpc, criAPI, prometheus, containerd, "k8s.io/client-go/kubernetes",
			"k8s.io/client-go/kubernetes/scheme", "k8s.io/client-go/discovery", "github.com/google/gnostic-models"}, 26},
		// client-go's clientset as a kubeapi.Interface: for users who have one, and tests.
		{"kubeapi/clientgo", []string{"kubeapi"}, []string{grpc, criAPI, prometheus, containerd}, 46},
		{"podstatus/apiclient", []string{"internal/smpdiff", "kubeapi", "kubecontainer", "podstatus", "resources"}, []string{grpc, criAPI, prometheus, containerd, "k8s.io/client-go/kubernetes"}, 26},
		{"cgroupmgr", []string{"podpath", "resources"}, []string{criAPI, prometheus, clientGo}, 30},
		// The CRI client: prometheus for its kubelet_runtime_operations_* metrics.
		{"runtime", []string{"kubecontainer", "resources", "runtime/criconv"}, []string{containerd, clientGo, kuberuntimePkg}, 31},
		// The CRI -> kubecontainer conversions, shared by runtime, kuberuntime and gc.
		{"runtime/criconv", []string{"kubecontainer", "resources"}, []string{prometheus, containerd, clientGo}, 24},
		// Pull secrets to registry credentials: distribution/reference (with
		// go-digest) normalises image names as the kubelet does.
		{"credentials", nil, light, 20},
		// The kubelet's container log rotation and /var/log/containers links:
		// CRI types for the runtime interface it declares (cri-api, grpc,
		// protobuf), apimachinery's resource.Quantity for MaxSize; no
		// sibling, no metrics (the kubelet has none for it).
		{"containerlog", nil, []string{prometheus, containerd, clientGo, kuberuntimePkg}, 14},
		// The pod-level manager on the CRI client; credentials for pull
		// secrets (distribution/reference, go-digest); containerlog for the
		// /var/log/containers links.
		{"kuberuntime", []string{"containerlog", "credentials", "fieldpath", "kubecontainer", "podpath", "resources", "runtime", "runtime/criconv"},
			[]string{containerd, clientGo}, 33},
		// k8s.io/cri-streaming serves exec, attach and port-forward as
		// containerd does (go-restful, klog, k8s.io/streaming, spdystream).
		{"runtime/fake", nil, []string{containerd, clientGo}, 14},
		// A node agent's runtime connection: the CRI client; runtime/fake
		// served in-process only with -tags fakeruntime (not here); no
		// pod-level manager, no API client.
		{"runtime/runtimeconn", []string{"kubecontainer", "resources", "runtime", "runtime/criconv"},
			[]string{containerd, clientGo, kuberuntimePkg}, 32},
		// cri-streaming's option parsers, apimachinery's upgrade-aware proxy
		// (spdystream, go-flowrate) for the streaming paths.
		// cAdvisor's container metrics from the cgroup files: the CRI's
		// listings, distribution/reference for images.
		{"cadvisor", nil, []string{containerd, clientGo, kuberuntimePkg}, 30},
		// cadvisor's Stats for the summary (distribution/reference, go-digest).
		{"server", []string{"cadvisor", "containerlog", "internal/fsstats", "podpath", "resources", "cgroupmgr", "kubecontainer"}, []string{clientGo}, 48},
		// The kubelet's authn/authz over kubeapi's TokenReview and
		// SubjectAccessReview, not k8s.io/apiserver (#34: CEL, OpenTelemetry
		// and 25 modules more), nor client-go's typed clientset.
		{"server/serverauth", []string{"kubeapi"}, []string{criAPI, containerd, "k8s.io/apiserver", "k8s.io/client-go/kubernetes"}, 41},
		// The kubelet's listeners: server's handlers behind serverauth.
		{"server/serving", []string{"cadvisor", "cgroupmgr", "containerlog", "internal/fsstats", "kubeapi", "kubecontainer", "podpath", "resources", "server", "server/serverauth"},
			[]string{"k8s.io/apiserver", "k8s.io/client-go/kubernetes"}, 60},
		// client-go's tools/cache for APINode's reflector (the kubelet's node informer).
		{"nodestatus", []string{"internal/fsstats", "internal/smpdiff", "kubeapi", "kubecontainer", "resources"}, []string{grpc, criAPI, prometheus, containerd, "k8s.io/client-go/kubernetes"}, 45},
		{"mirrorpod", []string{"kubeapi"}, []string{grpc, criAPI, prometheus, containerd, "k8s.io/client-go/kubernetes"}, 26},
		// The claim status patch by smpdiff, not strategicpatch (kube-openapi).
		{"volume/apiclient", []string{"internal/smpdiff", "kubeapi"}, []string{grpc, criAPI, prometheus, containerd, "k8s.io/client-go/kubernetes",
			"k8s.io/apimachinery/pkg/util/strategicpatch"}, 26},
		// The kubelet's event recorder: client-go's object references and
		// token buckets, not its recorder (strategicpatch, kube-openapi).
		{"events", nil, []string{grpc, criAPI, prometheus, containerd, "k8s.io/client-go/kubernetes",
			"k8s.io/client-go/tools/record", "k8s.io/apimachinery/pkg/util/strategicpatch"}, 21},
		// podsource for the Dispatcher's updates (fsnotify and yaml come with it).
		// admission for the admit handlers' PodAdmitHandler and PodAdmitResult (with it
		// k8s.io/component-helpers).
		{"podsync", []string{"containerlog", "admission", "credentials", "fieldpath", "internal/smpdiff", "podpath", "podsource", "resources", "cgroupmgr", "kubecontainer", "kuberuntime", "podstartup", "podstatus",
			"podworkers", "runtime", "runtime/criconv"}, []string{clientGo}, 46},
		// CRI types for the runtime interfaces it declares (cri-api, grpc,
		// protobuf); kubecontainer's labels, podpath's log layout, criconv's
		// container states. Not the pod-level manager: the GC reads the
		// runtime, not pods.
		{"gc", []string{"containerlog", "internal/fsstats", "kubecontainer", "podpath", "resources", "runtime/criconv"}, []string{prometheus, containerd, clientGo, kuberuntimePkg}, 24},
		// k8s.io/kubelet's config/v1beta1 for IgnoredConfigFields: its component-base
		// logging and tracing types bring pflag, klog, otel and client_golang (36);
		// evanphx/json-patch.v4 merges the --config-dir drop-ins as the kubelet does.
		{"kubeletflags", nil, []string{grpc, criAPI, containerd, clientGo}, 38},
		// The kubelet's plugin registration: grpc and the pluginregistration
		// API, no client-go.
		{"pluginmanager", nil, []string{criAPI, prometheus, containerd, clientGo}, 12},
		// CSI's node side: the CSI spec, grpc, k8s.io/api and k8s.io/kubelet (the
		// Summary API's volume stats), no client-go (csi/nodeinfo has it).
		{"csi", nil, []string{criAPI, prometheus, containerd, clientGo}, 24},
		{"csi/nodeinfo", []string{"csi", "kubeapi"}, []string{criAPI, prometheus, containerd, "k8s.io/client-go/kubernetes"}, 31},
		{"csi/apiclient", []string{"csi", "kubeapi"}, []string{criAPI, prometheus, containerd, "k8s.io/client-go/kubernetes"}, 31},
		// k8s.io/kubelet for the Summary API's types, golang.org/x/sys for statfs;
		// internal/fsstats, nodekit's one statfs reader; admission for the
		// admit handlers' Result (with it k8s.io/component-helpers).
		{"eviction", []string{"admission", "internal/fsstats", "resources"}, light, 21},
		// The kubelet's OOM watcher: k8s.io/api for the Node's reference, an
		// EventRecorder interface instead of client-go, golang.org/x/sys for
		// the boot time.
		{"oomwatch", nil, light, 19},
		// k8s.io/component-helpers for the kubelet's pod requests, node
		// affinity and taint helpers (klog, logr come with it).
		{"admission", nil, light, 19},
		// A real Prometheus for tests, driven as a process over its HTTP API:
		// testify (internal/poll) and sigs.k8s.io/yaml for its configuration;
		// nothing of Prometheus itself, nor client_golang.
		{"internal/promtest", []string{"internal/poll"}, light, 6},
		// The kubelet's composition: every package a node agent runs, not
		// the process's parts (serverauth, kubeletflags),
		// nor runtime/fake (Config.RuntimeOnHost says where the runtime is).
		{"nodeagent", []string{"containerlog", "admission", "allocation", "cadvisor", "cgroupmgr", "credentials", "csi", "csi/apiclient", "csi/nodeinfo", "events", "eviction", "fieldpath", "gc", "internal/fsstats", "internal/smpdiff", "kubeapi", "kubecontainer",
			"kuberuntime", "mirrorpod", "nodestatus", "oomwatch", "pleg", "pleg/plegmetrics", "pluginmanager", "podpath", "podsource", "podsource/apiserver", "podstartup", "podstatus",
			"podstatus/apiclient", "podsync", "podworkers", "prober", "prober/probe", "resources", "runtime", "runtime/criconv",
			"server", "statuscache", "userns", "volume", "volume/apiclient"}, nil, 58},
		// Hollow nodes: nodeagent, each on its own runtime/fake.
		{"hollow", []string{"containerlog", "admission", "allocation", "cadvisor", "cgroupmgr", "credentials", "csi", "csi/apiclient", "csi/nodeinfo", "events", "eviction", "fieldpath", "gc", "internal/fsstats", "internal/smpdiff", "kubeapi", "kubecontainer",
			"kuberuntime", "mirrorpod", "nodeagent", "nodestatus", "oomwatch", "pleg", "pleg/plegmetrics", "pluginmanager", "podpath", "podsource", "podsource/apiserver", "podstartup", "podstatus",
			"podstatus/apiclient", "podsync", "podworkers", "prober", "prober/probe", "resources", "runtime", "runtime/criconv", "runtime/fake",
			"server", "statuscache", "userns", "volume", "volume/apiclient"}, nil, 59},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-f",
				"{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", module+"/"+tc.pkg).CombinedOutput()
			require.NoError(t, err, "go list: %s", out)
			var siblings []string
			modules, pkgs := map[string]bool{}, map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				pkg, mod, _ := strings.Cut(line, " ")
				pkgs[pkg] = true
				switch {
				case mod == module && pkg != module+"/"+tc.pkg:
					siblings = append(siblings, strings.TrimPrefix(pkg, module+"/"))
				case mod != "" && mod != module:
					modules[mod] = true
				}
			}
			sort.Strings(siblings)
			want := append([]string(nil), tc.siblings...)
			sort.Strings(want)
			assert.Equal(t, want, siblings, "nodekit packages it compiles")
			for _, m := range tc.forbidden {
				assert.False(t, modules[m] || pkgs[m], "compiles %s", m)
			}
			assert.LessOrEqual(t, len(modules), tc.modules, "modules: %s", strings.Join(keys(modules), " "))
		})
	}
}

// TestAgentsDoNotLinkTheFakeRuntime: a production node agent does not
// compile runtime/fake, its CRI server and streaming. hollow links it on
// purpose (each hollow node runs on one); examples/kubelet and
// runtime/runtimeconn serve one in-process for --runtime=fake (or auto,
// without containerd) only when built with -tags fakeruntime (#30).
func TestAgentsDoNotLinkTheFakeRuntime(t *testing.T) {
	for _, pkg := range []string{"nodeagent", "examples/kubelet", "runtime/runtimeconn"} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		assert.NotContains(t, strings.Fields(string(out)), module+"/runtime/fake", "%s links runtime/fake", pkg)
	}
}

// TestAgentsDoNotLinkTheTypedClientset: an agent speaks to the API server
// through kubeapi; client-go's typed clientset registers every API group
// at start and links discovery's OpenAPI (8.7 MB resident, #34). Only
// kubeapi/clientgo, for users who have a clientset, and tests link it.
// Nor strategicpatch, with kube-openapi, gnostic and yaml v3 (2.6 MB of
// binary, #34): smpdiff and events make the patches an agent sends.
func TestAgentsDoNotLinkTheTypedClientset(t *testing.T) {
	for _, pkg := range []string{"nodeagent", "hollow", "examples/kubelet", "examples/hollownodes"} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		for _, p := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/kubernetes/scheme", "k8s.io/client-go/discovery",
			"k8s.io/apimachinery/pkg/util/strategicpatch", "github.com/google/gnostic-models/openapiv2", "go.yaml.in/yaml/v3"} {
			assert.NotContains(t, strings.Fields(string(out)), p, "%s links %s", pkg, p)
		}
	}
}

// TestReleaseBuildLinksNoTrace: built as the README says (-tags
// grpcnotrace, as Kubernetes' release builds), the agents link neither
// grpc's x/net/trace nor its html/template, whose reflective method calls
// make the linker keep every exported method (5 MiB of the reference
// agent's code, #34).
func TestReleaseBuildLinksNoTrace(t *testing.T) {
	for _, pkg := range []string{"examples/kubelet", "examples/hollownodes"} {
		out, err := exec.Command("go", "list", "-tags", "grpcnotrace", "-deps", module+"/"+pkg).CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		for _, p := range []string{"golang.org/x/net/trace", "html/template"} {
			assert.NotContains(t, strings.Fields(string(out)), p, "%s links %s", pkg, p)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
