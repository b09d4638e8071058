#!/usr/bin/env bash
# csi-e2e.sh - persistent volumes through CSI on a whole cluster (issue #32): the control plane of
# hack/conformance.sh (kube-apiserver, kube-controller-manager with the attach-detach, persistent volume
# and StatefulSet controllers, kube-scheduler), containerd and the reference agent; a CSI driver
# (csi/csitest with its Controller service, in the test's process) registered through the agent's plugin
# registry; and the external provisioner, attacher and resizer of kubernetes-csi, built from the Go module
# proxy. e2e/csi_test.go (build tag csie2e) runs a StatefulSet on it, recreates its pods, grows a claim
# online and checks that nothing stays attached, mounted or staged once it is all deleted.
#
# Usage: hack/csi-e2e.sh   (as root; hack/test.sh runs it)
# Env (optional): NODEKIT_CSIE2E_DIR (default /tmp/nodekit-csi-e2e), NODEKIT_CSIE2E_PORT_OFFSET (200: the
#   cluster's ports are hack/conformance.sh's plus it), NODEKIT_BIN_CACHE (the sidecars are cached in
#   $NODEKIT_BIN_CACHE/csi-sidecars-<versions>).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${NODEKIT_CSIE2E_DIR:-/tmp/nodekit-csi-e2e}
# The sidecars' releases: those the module proxy serves that speak the CSI spec v1.12+ and Kubernetes 1.36/1.37.
SIDECARS=(github.com/kubernetes-csi/external-provisioner/v6@v6.4.0:csi-provisioner
  github.com/kubernetes-csi/external-attacher/v4@v4.13.0:csi-attacher
  github.com/kubernetes-csi/external-resizer/v2@v2.3.0:csi-resizer)
BIN=${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/csi-sidecars-provisioner6.4.0-attacher4.13.0-resizer2.3.0
log() { echo "[csi-e2e +${SECONDS}s] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Each sidecar is built in its own module (they pin Kubernetes with replace directives, which go install
# refuses), from the copy the module proxy serves.
build_sidecars() {
  mkdir -p "$BIN"
  local s mod cmd dir work
  for s in "${SIDECARS[@]}"; do
    mod=${s%%:*} cmd=${s##*:}
    [[ -x $BIN/$cmd ]] && continue
    log "building $cmd ($mod) from the Go module proxy"
    dir=$(GOFLAGS=-mod=mod go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -d $dir ]] || die "go mod download $mod"
    work=$(mktemp -d /tmp/nodekit-csi-sidecar.XXXXXX)
    cp -r "$dir/." "$work" && chmod -R u+w "$work"
    (cd "$work" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath -o "$BIN/$cmd" "./cmd/$cmd") || { rm -rf "$work"; die "building $cmd"; }
    rm -rf "$work"
  done
}

build_sidecars
export NODEKIT_CONFORMANCE_DIR=$DIR NODEKIT_CONFORMANCE_PORT_OFFSET=${NODEKIT_CSIE2E_PORT_OFFSET:-200}
trap 'bash "$ROOT/hack/conformance.sh" down >/dev/null 2>&1 || true' EXIT
log "cluster (hack/conformance.sh up in $DIR)"
bash "$ROOT/hack/conformance.sh" up
busybox=$(cd "$DIR/images" && ls busybox-*.tar | head -1) || die "no busybox image in $DIR/images"
busybox=${busybox#busybox-}
log "go test -tags csie2e -run TestCSIStatefulSet ./e2e"
cd "$ROOT"
NODEKIT_CSIE2E_KUBECONFIG=$DIR/apiserver/kubeconfig NODEKIT_CSIE2E_ROOT_DIR=$DIR/kubelet \
  NODEKIT_CSIE2E_NODE=conformance-node NODEKIT_CSIE2E_BIN=$BIN \
  NODEKIT_CSIE2E_IMAGE=nodekit.local/e2e-test-images/busybox:${busybox%.tar} \
  go test -race -count=1 -tags csie2e -run '^TestCSIStatefulSet$' -timeout 15m -v ./e2e 2>&1 | tail -40
status=${PIPESTATUS[0]}
((status == 0)) || { tail -30 "$DIR/agent.log" >&2; die "TestCSIStatefulSet failed"; }
log "PASS"
