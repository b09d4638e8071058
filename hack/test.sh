#!/usr/bin/env bash
# hack/test.sh - the project's test command (README, .ci/run): a gofmt check
# (drift fails the run), unit tests,
# the real-part tests (build tag "integration": containerd, cgroups, a real
# kube-apiserver + etcd, loopback servers, a real Prometheus), the kubectl-driven black-box run
# (hack/e2e-kubectl.sh), the upstream e2e suite's fast [NodeConformance]
# specs (hack/conformance.sh subset), persistent volumes through CSI on a
# whole cluster (hack/csi-e2e.sh), and every benchmark once with a short -benchtime;
# Go tests and benchmarks with -race.
#
# Needs root and Debian (apt) for containerd; installs what is missing.
# Env: NODEKIT_SOAK (default 150s) is the churn of e2e's TestSoak, the agent
#      under faults on real parts (NODEKIT_SOAK=10m for a long run);
#      NODEKIT_KEEP_CONTAINERD=1 leaves containerd running afterwards;
#      NODEKIT_PROMETHEUS_DIR holds prometheus and promtool (default: hack/prometheus.sh's build);
#      BENCHTIME (default 20x) is the -benchtime of the benchmark pass;
#      FUZZTIME (default 250000x), FUZZTIME_API (default 150000x),
#      FUZZTIME_THRESHOLDS (default 200000x), FUZZTIME_PROBE (default
#      200000x) and FUZZTIME_OOM (default 200000x) are the -fuzztime of the
#      manifest parser, the node API's requests, the threshold parser, the
#      HTTP probe's response parser and the kernel log's OOM parser.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=/usr/local/go/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin
log() { echo "[test.sh +${SECONDS}s] $*" >&2; }

command -v go >/dev/null || { log "go not found (expected /usr/local/go/bin/go)"; exit 1; }
[[ $(id -u) == 0 ]] || { log "must run as root (containerd, cgroups)"; exit 1; }
# -race needs cgo.
command -v gcc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null; }

# gofmt drift fails the run first, before anything is started.
log "gofmt"
# shellcheck disable=SC2046  # one word per file
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [[ -n $unformatted ]]; then
  log "not gofmt-ed (run gofmt -w on them):"
  echo "$unformatted" >&2
  exit 1
fi

log "starting containerd"
bash hack/containerd-up.sh >/dev/null
# shellcheck disable=SC1091
. "${NODEKIT_CONTAINERD_DIR:-/tmp/nodekit-containerd}/env"

# kube-apiserver + etcd: prebuilt binaries from a directory of gzipped
# releases when one is at hand (NODEKIT_K8S_BIN_DIR, or ../shared/k8s-bin
# beside the clone), otherwise hack/apiserver-up.sh builds them from the Go
# module proxy once (8-13 min cold) and caches them.
if [[ -z ${NODEKIT_K8S_BIN_DIR:-} && -d ../shared/k8s-bin ]]; then
  NODEKIT_K8S_BIN_DIR=$(cd ../shared/k8s-bin && pwd)
  export NODEKIT_K8S_BIN_DIR
fi
log "starting kube-apiserver + etcd"
bash hack/apiserver-up.sh --fresh >/dev/null  # a throwaway cluster: nothing left from an earlier run
# shellcheck disable=SC1091
. "${NODEKIT_APISERVER_DIR:-/tmp/nodekit-apiserver}/env"
if [[ ${NODEKIT_KEEP_CONTAINERD:-0} != 1 ]]; then
  trap 'log "stopping containerd and the apiserver"; bash hack/containerd-down.sh >&2 || true; bash hack/apiserver-down.sh >&2 || true' EXIT
fi

# prometheus and promtool for the integration tests' internal/promtest (#33: a real Prometheus that
# scrapes over TLS with a bearer token, promtool to lint an exposition): NODEKIT_PROMETHEUS_DIR when
# set, else hack/prometheus.sh builds them from the Go module proxy once (3.5-4 min cold) and caches them.
log "prometheus and promtool (hack/prometheus.sh)"
NODEKIT_PROMETHEUS_DIR=${NODEKIT_PROMETHEUS_DIR:-$(bash hack/prometheus.sh)}
export NODEKIT_PROMETHEUS_DIR

log "go vet"
go vet -tags integration ./...
(cd hack/tools && go vet ./...)

log "tests (unit + integration, -race)"
go test -race -count=1 -tags integration -timeout 20m ./...
(cd hack/tools && go test -race -count=1 ./...)
# The in-process fake runtime is linked only with -tags fakeruntime (the
# README's first command); its fallback and the reference agent on it.
go test -race -count=1 -tags fakeruntime ./runtime/runtimeconn ./examples/kubelet

# The reference agent as its own process on the same containerd and apiserver,
# checked only with kubectl: register, Ready, lease, mirror pod, an API pod with
# configMap and secret volumes, delete, a 30 s apiserver outage, recovery (1-2 min).
log "black-box cluster run with kubectl (hack/e2e-kubectl.sh)"
bash hack/e2e-kubectl.sh

# Kubernetes' own e2e specs against the agent on a control plane of its own
# (apiserver, controller-manager, scheduler, containerd): the fast
# [NodeConformance] specs of hack/conformance/subset.txt, every one of which
# must pass (3-5 min; the first run builds the e2e suite, 20-25 min cold).
# hack/conformance.sh all runs every [NodeConformance] spec (hours at v1.37).
log "Kubernetes e2e [NodeConformance] subset (hack/conformance.sh subset)"
bash hack/conformance.sh subset

# A StatefulSet on CSI volumes: the external provisioner, attacher and
# resizer (built from the Go module proxy, 5-6 min cold) with
# kube-controller-manager and the agent, around a fake driver (2-3 min).
log "persistent volumes through CSI (hack/csi-e2e.sh)"
bash hack/csi-e2e.sh

# The manifest parser against arbitrary bytes (podsource's FuzzParse; its
# seeds in podsource/testdata/seeds also run as a plain test above, with
# -race). Without -race here: parsing is one goroutine, so the detector finds
# nothing, and it makes each input about 20 times slower.
#
# Budgets are counts of inputs, not durations: with a duration, Go's fuzzing
# coordinator can race its own deadline on a loaded machine and fail the run
# with a bare "context deadline exceeded" and no input (as it did in CI on
# FuzzRequests; see golang/go's internal/fuzz stop()). A count has no deadline.
log "fuzzing the manifest parser (-fuzztime ${FUZZTIME:-250000x})"
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime "${FUZZTIME:-250000x}" ./podsource
# The node API's request parsing (paths and queries of logs, exec, attach,
# port-forward, run): a clear 4xx or a success, never a 5xx or a panic.
log "fuzzing the node API's requests (-fuzztime ${FUZZTIME_API:-150000x})"
go test -run '^$' -fuzz '^FuzzRequests$' -fuzztime "${FUZZTIME_API:-150000x}" ./server
# The probes' HTTP/1 response parser against net/http reading the same
# bytes: never more lenient, the same status and body when both accept.
log "fuzzing the HTTP probe's response parser (-fuzztime ${FUZZTIME_PROBE:-200000x})"
go test -run '^$' -fuzz '^FuzzReadResponse$' -fuzztime "${FUZZTIME_PROBE:-200000x}" ./prober/probe
# The kubelet's threshold syntax (--eviction-hard and the rest): an error
# that names the part, or thresholds that print back to what they parse from.
log "fuzzing the eviction threshold parser (-fuzztime ${FUZZTIME_THRESHOLDS:-200000x})"
go test -run '^$' -fuzz '^FuzzParseThresholds$' -fuzztime "${FUZZTIME_THRESHOLDS:-200000x}" ./resources
# The kernel log's OOM parser against arbitrary lines: never a panic, never
# a negative pid.
log "fuzzing the OOM parser (-fuzztime ${FUZZTIME_OOM:-200000x})"
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime "${FUZZTIME_OOM:-200000x}" ./oomwatch

log "benchmarks (-benchtime ${BENCHTIME:-20x})"
# -p 1: one package's benchmarks at a time, so they don't share the cores with
# each other (BenchmarkManyWorkers runs probes against 1 s timeouts).
# -tags integration: the benchmarks against the real apiserver, up until "done".
go test -race -p 1 -tags integration -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-20x}" -timeout 20m ./...

# Hollow nodes (#19): 100 nodes x 110 pods against the real apiserver, once.
# Its figures (RSS and CPU per node) are the real build's, so the full scale
# runs without the race detector; the same code runs under -race at 10 nodes.
log "hollow nodes: 10 x 110 under -race, then 100 x 110 (the issue's figures)"
NODEKIT_HOLLOW_BENCH=1 NODEKIT_HOLLOW_NODES=10 NODEKIT_HOLLOW_WINDOW=5 \
  go test -race -tags integration -run '^$' -bench '^BenchmarkHollowNodes100x110$' -benchtime 1x -timeout 20m ./hollow
NODEKIT_HOLLOW_BENCH=1 go test -tags integration -run '^$' -bench '^BenchmarkHollowNodes100x110$' -benchtime 1x -timeout 20m ./hollow
log "done"
