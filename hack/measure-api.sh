#!/usr/bin/env bash
# hack/measure-api.sh - issue #34's measurement at full size: e2e's
# TestMeasureAPIStartup on the real containerd and kube-apiserver, pods created
# through the API for one node, the real kubelet v$NODEKIT_K8S_VERSION and then
# the reference agent (burst of 110, churn at 10 and 20 pods/s for 3 minutes
# each, 250 pods at once). Prints MEASURE lines and a markdown table of both
# agents' figures; 25-35 minutes on 2 cores.
#
# Usage:  bash hack/measure-api.sh        (as root)
# Env:    NODEKIT_KUBELET_GZ   the gzipped kubelet (default
#                              /work/shared/k8s-bin/kubelet-v1.37.2.gz); when absent, the
#                              kubelet is built from the Go module proxy (hack/lib-k8s-build.sh,
#                              cold: minutes) into ${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-
#                              $HOME/.cache}/nodekit-bins}/k8s-v$NODEKIT_K8S_VERSION
#         NODEKIT_KUBELET_BIN  a kubelet binary to use (skips both; it must have been built so)
#         NODEKIT_MEASURE_API_BURST, _POPULATION, _RATES, _CHURN, _MANY, NODEKIT_MEASURE_WINDOW:
#                              the sizes (the test's defaults are the issue's)
#         NODEKIT_KEEP_CONTAINERD=1 leaves containerd and the apiserver running afterwards;
#         NODEKIT_K8S_BIN_DIR, NODEKIT_APISERVER_DIR, NODEKIT_CONTAINERD_DIR: as for
#         hack/apiserver-up.sh and hack/containerd-up.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=/usr/local/go/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin
log() { echo "[measure-api.sh +${SECONDS}s] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) == 0 ]] || die "must run as root (containerd, cgroups)"
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"
K8S_VERSION=${NODEKIT_K8S_VERSION:-1.37.2}
BIN_CACHE=${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/k8s-v$K8S_VERSION
KUBELET_GZ=${NODEKIT_KUBELET_GZ:-/work/shared/k8s-bin/kubelet-v$K8S_VERSION.gz}

# The kubelet: as given, unpacked from the gzipped release, or built once and cached.
# shellcheck source=hack/lib-k8s-build.sh disable=SC1091  # checked on its own
. hack/lib-k8s-build.sh
# The kubelet as Kubernetes releases it: its version, built with the release
# build's tags (K8S_RELEASE_TAGS), as the reference agent is.
kubelet_ok() {
  "$1" --version 2>/dev/null | grep -qx "Kubernetes v$K8S_VERSION" &&
    go version -m "$1" 2>/dev/null | grep -q -- "-tags=$K8S_RELEASE_TAGS\$"
}
if [[ -z ${NODEKIT_KUBELET_BIN:-} ]]; then
  NODEKIT_KUBELET_BIN=$BIN_CACHE/kubelet
  if ! kubelet_ok "$NODEKIT_KUBELET_BIN" && [[ -f $KUBELET_GZ ]]; then
    log "unpacking $KUBELET_GZ"
    mkdir -p "$BIN_CACHE"
    gunzip -c "$KUBELET_GZ" > "$BIN_CACHE/.kubelet.tmp" && chmod +x "$BIN_CACHE/.kubelet.tmp" &&
      mv -f "$BIN_CACHE/.kubelet.tmp" "$NODEKIT_KUBELET_BIN"
  fi
  if ! kubelet_ok "$NODEKIT_KUBELET_BIN"; then
    log "building the kubelet v$K8S_VERSION with tags $K8S_RELEASE_TAGS from the Go module proxy (cold: minutes)"
    k8s_build "$K8S_VERSION" "$BIN_CACHE" k8s.io/kubernetes/cmd/kubelet || die "building the kubelet failed"
  fi
fi
kubelet_ok "$NODEKIT_KUBELET_BIN" ||
  die "$NODEKIT_KUBELET_BIN: --version does not say Kubernetes v$K8S_VERSION, or go version -m shows no -tags=$K8S_RELEASE_TAGS"
export NODEKIT_KUBELET_BIN

# containerd and kube-apiserver + etcd, as hack/test.sh starts them.
log "starting containerd"
bash hack/containerd-up.sh >/dev/null
# shellcheck disable=SC1091
. "${NODEKIT_CONTAINERD_DIR:-/tmp/nodekit-containerd}/env"
if [[ -z ${NODEKIT_K8S_BIN_DIR:-} && -d ../shared/k8s-bin ]]; then
  NODEKIT_K8S_BIN_DIR=$(cd ../shared/k8s-bin && pwd)
  export NODEKIT_K8S_BIN_DIR
fi
log "starting kube-apiserver + etcd"
bash hack/apiserver-up.sh --fresh >/dev/null
# shellcheck disable=SC1091
. "${NODEKIT_APISERVER_DIR:-/tmp/nodekit-apiserver}/env"
if [[ ${NODEKIT_KEEP_CONTAINERD:-0} != 1 ]]; then
  trap 'log "stopping containerd and the apiserver"; bash hack/containerd-down.sh >&2 || true; bash hack/apiserver-down.sh >&2 || true' EXIT
fi

# The agent measured as it ships: built without -race, static (see
# examples/kubelet's doc; the kubelet is measured as Kubernetes ships it, with cgo).
AGENT=$(mktemp -d /tmp/nodekit-measure-api.XXXXXX)/kubelet
CGO_ENABLED=0 go build -tags grpcnotrace -o "$AGENT" ./examples/kubelet
export NODEKIT_AGENT_BIN=$AGENT
# The issue's sizes (#34), unless given; the test's own defaults are CI's small run.
export NODEKIT_MEASURE_API_BURST=${NODEKIT_MEASURE_API_BURST:-110} NODEKIT_MEASURE_API_POPULATION=${NODEKIT_MEASURE_API_POPULATION:-110}
export NODEKIT_MEASURE_API_RATES=${NODEKIT_MEASURE_API_RATES:-10,20} NODEKIT_MEASURE_API_CHURN=${NODEKIT_MEASURE_API_CHURN:-3m}
export NODEKIT_MEASURE_API_MANY=${NODEKIT_MEASURE_API_MANY:-250} NODEKIT_MEASURE_WINDOW=${NODEKIT_MEASURE_WINDOW:-60s}
log "TestMeasureAPIStartup: the kubelet ($NODEKIT_KUBELET_BIN), then the reference agent"
go test -tags integration -count=1 -run '^TestMeasureAPIStartup$' -v -timeout 90m ./e2e/
rm -rf "$(dirname "$AGENT")"
log "done"
