#!/usr/bin/env bash
# apiserver-up.sh - start a private etcd + kube-apiserver on 127.0.0.1 for nodekit's
# API-server integration tests (podsource), and write kubeconfigs and an env file.
#
# Usage:  hack/apiserver-up.sh [--fresh]
#   --fresh   wipe etcd data, certificates and tokens first (a new, empty cluster).
# Without --fresh the state of an earlier run is kept: a ready apiserver from the same
# state dir and settings is reused as is; if only one process died (or was stopped by a
# test to cut watches), the missing process is started again on the same etcd data,
# certificates and tokens, so existing kubeconfigs and objects stay valid.
#
# Binaries, first match wins:
#   1. KUBE_APISERVER_BIN and ETCD_BIN (both set): used as they are.
#   2. NODEKIT_K8S_BIN_DIR: a directory with kube-apiserver-v<ver>.gz, etcd-v<ver>.gz and the
#      sums of the unpacked binaries: a binary's line is taken from SHA256SUMS-v$K8S_VERSION when
#      that file exists and lists it, else from SHA256SUMS (/work/shared/k8s-bin: SHA256SUMS has
#      etcd and kube-apiserver v1.32.13, SHA256SUMS-v1.37.2 kube-apiserver and kubelet v1.37.2);
#      unpacked into the cache and verified.
#   3. Built from the Go module proxy into the cache by hack/lib-k8s-build.sh (cold: 8-13 min on 2 cores, ~80 MB
#      download, ~3 GB Go build cache): a scratch module requiring k8s.io/kubernetes
#      v$K8S_VERSION with every staging module replaced by k8s.io/<name> v0.<minor>.<patch>;
#      etcd is go.etcd.io/etcd/server/v3 at the version Kubernetes pins (v1.37.2: etcd v3.7.0).
# etcd: Kubernetes v1.37 pins etcd v3.7.0 and kubeadm asks for at least v3.5.24 for an external
# etcd; kube-apiserver itself checks no minimum and asks only v3.5.13 or later for watch progress
# requests (consistent reads from its cache), so the etcd v3.5.16 of NODEKIT_K8S_BIN_DIR serves it.
# The API features a v1.37 kubelet needs (the pods/resize subresource, pod generation and
# observedGeneration, image volumes, relaxed environment variable names) are GA and on in v1.37:
# no feature gate is set here.
# Cache: ${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/k8s-v$K8S_VERSION
#
# Env (all optional):
#   NODEKIT_APISERVER_DIR   state dir (default /tmp/nodekit-apiserver)
#   NODEKIT_K8S_VERSION     default 1.37.2
#   NODEKIT_APISERVER_PORT  default 16443; NODEKIT_ETCD_PORT 23790; NODEKIT_ETCD_PEER_PORT 23800
#   NODEKIT_NODE_NAME       node identity of the node kubeconfig (default nodekit-node)
#   NODEKIT_APISERVER_TIMEOUT  seconds to wait for /readyz (default 90)
#   NODEKIT_APISERVER_EXTRA_ARGS  extra kube-apiserver flags (word-split)
#   NODEKIT_APISERVER_ADMISSION   admission plugins to enable (default NodeRestriction); ServiceAccount stays
#                                 disabled unless listed (it needs kube-controller-manager's service accounts)
#
# Outputs in the state dir: kubeconfig (admin, group system:masters), kubeconfig-node
# (system:node:<node>, group system:nodes: Node authorizer + NodeRestriction apply),
# env (exports NODEKIT_KUBECONFIG NODEKIT_NODE_KUBECONFIG NODEKIT_NODE_NAME
# NODEKIT_APISERVER_URL NODEKIT_APISERVER_DIR NODEKIT_APISERVER_CA NODEKIT_CLIENT_CA: the client CA
# that signed the apiserver's kubelet-client certificate, for a node's --client-ca-file), etcd.log,
# kube-apiserver.log, etcd.pid, kube-apiserver.pid. Progress goes to stderr; the last
# stdout line is the admin kubeconfig path. Everything listens on 127.0.0.1 only.
# Stop with hack/apiserver-down.sh [--purge]; nothing is ever killed by name.
set -euo pipefail

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=${NODEKIT_APISERVER_DIR:-/tmp/nodekit-apiserver}
K8S_VERSION=${NODEKIT_K8S_VERSION:-1.37.2}
API_PORT=${NODEKIT_APISERVER_PORT:-16443}
ETCD_PORT=${NODEKIT_ETCD_PORT:-23790}
ETCD_PEER_PORT=${NODEKIT_ETCD_PEER_PORT:-23800}
NODE_NAME=${NODEKIT_NODE_NAME:-nodekit-node}
TIMEOUT=${NODEKIT_APISERVER_TIMEOUT:-90}
ADMISSION=${NODEKIT_APISERVER_ADMISSION:-NodeRestriction}
DISABLED_ADMISSION=ServiceAccount
[[ ,$ADMISSION, == *,ServiceAccount,* ]] && DISABLED_ADMISSION=
CACHE_ROOT=${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}
CACHE=$CACHE_ROOT/k8s-v$K8S_VERSION
export PATH=/usr/local/go/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin

FRESH=0
for a in "$@"; do
  case $a in
    --fresh) FRESH=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 0 ;;
    *) echo "usage: $0 [--fresh]" >&2; exit 2 ;;
  esac
done

log() { echo "[apiserver-up +${SECONDS}s] $*" >&2; }
die() { echo "[apiserver-up +${SECONDS}s] ERROR: $*" >&2; exit 1; }
case $DIR in /*) ;; *) die "NODEKIT_APISERVER_DIR must be absolute: $DIR" ;; esac
for t in openssl curl gunzip sha256sum setsid flock; do
  command -v $t >/dev/null || die "$t not found (apt-get install openssl curl gzip coreutils util-linux)"
done

mkdir -p "$DIR"; chmod 700 "$DIR"
exec 9>"$DIR/.lock"   # serialise concurrent runs; closed for the daemons (see start)
flock 9

# ---------------------------------------------------------------- binaries
# shellcheck source=hack/lib-k8s-build.sh disable=SC1091  # checked on its own
. "$HACK/lib-k8s-build.sh"
build_binaries() {
  command -v go >/dev/null || die "go not found (needed to build kube-apiserver; or set NODEKIT_K8S_BIN_DIR / KUBE_APISERVER_BIN+ETCD_BIN)"
  log "building kube-apiserver v$K8S_VERSION + etcd from the Go module proxy (cold: 8-13 min)"
  k8s_build "$K8S_VERSION" "$CACHE" k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3 ||
    die "building kube-apiserver and etcd failed"
  (cd "$CACHE" && sha256sum kube-apiserver etcd > SHA256SUMS)
  log "built: $(tr '\n' ' ' < "$CACHE/VERSIONS")"
}

cache_ok() { [[ -x $CACHE/kube-apiserver && -x $CACHE/etcd ]] &&
  "$CACHE/kube-apiserver" --version 2>/dev/null | grep -qx "Kubernetes v$K8S_VERSION"; }

if [[ -n ${KUBE_APISERVER_BIN:-} || -n ${ETCD_BIN:-} ]]; then
  [[ -x ${KUBE_APISERVER_BIN:-} && -x ${ETCD_BIN:-} ]] || die "set both KUBE_APISERVER_BIN and ETCD_BIN to executables"
elif [[ -n ${NODEKIT_K8S_BIN_DIR:-} ]]; then
  SRC=$NODEKIT_K8S_BIN_DIR
  api_gz=$SRC/kube-apiserver-v$K8S_VERSION.gz
  # shellcheck disable=SC2012  # one etcd-v<version>.gz, a plain name
  etcd_gz=$(ls "$SRC"/etcd-v*.gz 2>/dev/null | head -1 || true)
  [[ -f $api_gz && -n $etcd_gz ]] ||
    die "NODEKIT_K8S_BIN_DIR=$SRC must hold kube-apiserver-v$K8S_VERSION.gz and etcd-v*.gz"
  # The sums of the two binaries: each line from SHA256SUMS-v<ver> when it lists the binary, else SHA256SUMS.
  sums=
  for b in kube-apiserver etcd; do
    line=
    for f in "$SRC/SHA256SUMS-v$K8S_VERSION" "$SRC/SHA256SUMS"; do
      if [[ -f $f ]]; then line=$(awk -v b="$b" '$2 == b || $2 == "*" b {print $1 "  " b; exit}' "$f"); fi
      if [[ -n $line ]]; then break; fi
    done
    [[ -n $line ]] || die "no sum for $b in $SRC/SHA256SUMS-v$K8S_VERSION or $SRC/SHA256SUMS"
    sums+=$line$'\n'
  done
  if cache_ok && (cd "$CACHE" && printf %s "$sums" | sha256sum -c --quiet --status); then
    log "reusing verified binaries in $CACHE"
  else
    mkdir -p "$CACHE_ROOT"; tmp=$(mktemp -d "$CACHE_ROOT/.unpack.XXXXXX")
    gunzip -c "$api_gz" > "$tmp/kube-apiserver"; gunzip -c "$etcd_gz" > "$tmp/etcd"
    (cd "$tmp" && printf %s "$sums" | sha256sum -c --quiet) ||
      { rm -rf "$tmp"; die "binaries in $SRC fail their sums in $SRC/SHA256SUMS-v$K8S_VERSION or $SRC/SHA256SUMS"; }
    chmod 755 "$tmp/kube-apiserver" "$tmp/etcd"; printf %s "$sums" > "$tmp/SHA256SUMS"
    # File by file: other binaries in the cache (hack/e2e-kubectl.sh's kubectl) stay.
    mkdir -p "$CACHE"; for f in kube-apiserver etcd SHA256SUMS; do mv -f "$tmp/$f" "$CACHE/$f"; done; rmdir "$tmp"
    log "unpacked and verified $(basename "$api_gz") and $(basename "$etcd_gz") into $CACHE"
  fi
  KUBE_APISERVER_BIN=$CACHE/kube-apiserver ETCD_BIN=$CACHE/etcd
else
  if cache_ok; then log "reusing binaries in $CACHE"; else build_binaries; fi
  KUBE_APISERVER_BIN=$CACHE/kube-apiserver ETCD_BIN=$CACHE/etcd
fi

# ---------------------------------------------------------------- helpers
# A pid is ours only if it is alive and its command line names our state dir
# (guards against pid reuse). Processes are never looked up by name.
is_ours() { local pid=$1; [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] &&
            tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$DIR/"; }
pid_of() { cat "$DIR/$1.pid" 2>/dev/null || true; }
alive() { is_ours "$(pid_of "$1")"; }
api_ready() { [[ -s $DIR/admin.token && -s $DIR/certs/apiserver.crt ]] &&
  [[ $(curl -s --max-time 5 --cacert "$DIR/certs/apiserver.crt" -H "Authorization: Bearer $(<"$DIR/admin.token")" \
       -o /dev/null -w '%{http_code}' "https://127.0.0.1:$API_PORT/readyz") == 200 ]]; }
etcd_ready() { curl -s --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
port_busy() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
# start NAME CMD...: in its own session, detached; the pid file is written by the shell
# that then execs the binary, so it holds the daemon's own pid. fd 9 (lock) is closed.
start() {
  local name=$1; shift
  rm -f "$DIR/$name.pid"
  # shellcheck disable=SC2016  # $$ and $@ are the inner shell's
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$DIR/$name.pid" "$@" >> "$DIR/$name.log" 2>&1 < /dev/null 9>&- &
  local _i; for _i in $(seq 1 50); do [[ -s $DIR/$name.pid ]] && return 0; sleep 0.1; done
  die "$name did not start; see $DIR/$name.log"
}
stop_all() { NODEKIT_APISERVER_DIR=$DIR bash "$HACK/apiserver-down.sh" 9>&- >&2 || true; }

# Settings that require a restart when they change.
# kubelet-client=2: the apiserver calls kubelets with a client certificate, at
# their InternalIP first, as kubeadm sets it (a running apiserver without it is
# restarted).
SETTINGS="kubelet-client=2 version=$K8S_VERSION api=$KUBE_APISERVER_BIN etcd=$ETCD_BIN ports=$API_PORT,$ETCD_PORT,$ETCD_PEER_PORT node=$NODE_NAME admission=$ADMISSION extra=${NODEKIT_APISERVER_EXTRA_ARGS:-}"

write_outputs() {
  local f user token
  for f in kubeconfig:nodekit-admin:admin kubeconfig-node:system:node:$NODE_NAME:node; do
    token=$(<"$DIR/${f##*:}.token"); user=${f#*:}; user=${user%:*}; f=${f%%:*}
    cat > "$DIR/$f.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: nodekit
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $DIR/certs/apiserver.crt
users:
- name: $user
  user:
    token: $token
contexts:
- name: nodekit
  context: {cluster: nodekit, user: $user}
current-context: nodekit
EOF
    chmod 600 "$DIR/$f.tmp"; mv "$DIR/$f.tmp" "$DIR/$f"
  done
  cat > "$DIR/env.tmp" <<EOF
export NODEKIT_KUBECONFIG=$DIR/kubeconfig
export NODEKIT_NODE_KUBECONFIG=$DIR/kubeconfig-node
export NODEKIT_NODE_NAME=$NODE_NAME
export NODEKIT_APISERVER_URL=https://127.0.0.1:$API_PORT
export NODEKIT_APISERVER_DIR=$DIR
export NODEKIT_APISERVER_CA=$DIR/certs/apiserver.crt
export NODEKIT_CLIENT_CA=$DIR/certs/client-ca.crt
EOF
  mv "$DIR/env.tmp" "$DIR/env"
}

# ---------------------------------------------------------------- reuse?
if [[ $FRESH == 0 && $(cat "$DIR/settings" 2>/dev/null) == "$SETTINGS" ]] && alive etcd && alive kube-apiserver && api_ready; then
  log "reusing the running apiserver (etcd pid $(pid_of etcd), kube-apiserver pid $(pid_of kube-apiserver))"
  write_outputs
  echo "$DIR/kubeconfig"; exit 0
fi
if [[ $FRESH == 1 || $(cat "$DIR/settings" 2>/dev/null) != "$SETTINGS" ]]; then
  stop_all
elif alive kube-apiserver; then  # running but not ready: restart it
  NODEKIT_APISERVER_DIR=$DIR bash "$HACK/apiserver-down.sh" --only kube-apiserver 9>&- >&2 || true
fi
echo "$SETTINGS" > "$DIR/settings"

# ---------------------------------------------------------------- state
if [[ $FRESH == 1 ]]; then rm -rf "$DIR/etcd-data" "$DIR/certs" "$DIR"/*.token "$DIR"/sa.*; fi
mkdir -p "$DIR/certs"
if [[ ! -s $DIR/sa.key || ! -s $DIR/sa.pub ]]; then
  openssl genrsa -out "$DIR/sa.key" 2048 2>/dev/null
  openssl rsa -in "$DIR/sa.key" -pubout -out "$DIR/sa.pub" 2>/dev/null
fi
if [[ ! -s $DIR/certs/apiserver.crt || ! -s $DIR/certs/apiserver.key ]]; then
  # Self-signed serving certificate for 127.0.0.1 (also the clients' CA).
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=nodekit-apiserver" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -addext "basicConstraints=critical,CA:TRUE" \
    -keyout "$DIR/certs/apiserver.key" -out "$DIR/certs/apiserver.crt" 2>/dev/null
fi
# A client CA, which nodes trust with --client-ca-file, and the apiserver's
# client certificate for its calls to nodes (logs, exec, attach,
# port-forward): CN kube-apiserver-kubelet-client in system:masters, as
# kubeadm makes it.
C=$DIR/certs
if [[ ! -s $C/client-ca.crt || ! -s $C/kubelet-client.crt || ! -s $C/kubelet-client.key ]]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=nodekit-client-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$C/client-ca.key" -out "$C/client-ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
    -keyout "$C/kubelet-client.key" -out "$C/kubelet-client.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' > "$C/kubelet-client.ext"
  openssl x509 -req -in "$C/kubelet-client.csr" -CA "$C/client-ca.crt" -CAkey "$C/client-ca.key" -CAcreateserial \
    -days 3650 -extfile "$C/kubelet-client.ext" -out "$C/kubelet-client.crt" 2>/dev/null
  rm -f "$C/kubelet-client.csr" "$C/kubelet-client.ext"
fi
for t in admin node; do [[ -s $DIR/$t.token ]] || openssl rand -hex 24 > "$DIR/$t.token"; done
{
  echo "$(<"$DIR/admin.token"),nodekit-admin,nodekit-admin,system:masters"
  echo "$(<"$DIR/node.token"),system:node:$NODE_NAME,system:node:$NODE_NAME,system:nodes"
} > "$DIR/tokens.csv"
chmod 600 "$DIR"/*.token "$DIR/tokens.csv" "$DIR/sa.key" "$DIR/certs/apiserver.key" "$C/client-ca.key" "$C/kubelet-client.key"

# ---------------------------------------------------------------- etcd
if alive etcd && etcd_ready; then
  log "etcd already running (pid $(pid_of etcd))"
else
  alive etcd && NODEKIT_APISERVER_DIR=$DIR bash "$HACK/apiserver-down.sh" --only etcd 9>&- >&2
  for p in "$ETCD_PORT" "$ETCD_PEER_PORT"; do
    port_busy "$p" && die "127.0.0.1:$p is in use by another process (set NODEKIT_ETCD_PORT / NODEKIT_ETCD_PEER_PORT)"
  done
  t0=$SECONDS
  start etcd "$ETCD_BIN" --name nodekit --data-dir "$DIR/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "nodekit=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
    --listen-metrics-urls "" --unsafe-no-fsync --log-level warn
  deadline=$((SECONDS + 30))
  until etcd_ready; do
    alive etcd || { tail -20 "$DIR/etcd.log" >&2; die "etcd exited; see $DIR/etcd.log"; }
    (( SECONDS < deadline )) || { tail -20 "$DIR/etcd.log" >&2; die "etcd not healthy after 30s; see $DIR/etcd.log"; }
    sleep 0.1
  done
  log "etcd healthy in $((SECONDS - t0))s (pid $(pid_of etcd))"
fi

# ---------------------------------------------------------------- kube-apiserver
port_busy "$API_PORT" && die "127.0.0.1:$API_PORT is in use by another process (set NODEKIT_APISERVER_PORT)"
t0=$SECONDS
# shellcheck disable=SC2086
start kube-apiserver "$KUBE_APISERVER_BIN" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
  --tls-cert-file="$DIR/certs/apiserver.crt" --tls-private-key-file="$DIR/certs/apiserver.key" \
  --cert-dir="$DIR/certs" \
  --token-auth-file="$DIR/tokens.csv" \
  --client-ca-file="$DIR/certs/client-ca.crt" \
  --kubelet-client-certificate="$DIR/certs/kubelet-client.crt" --kubelet-client-key="$DIR/certs/kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins="$ADMISSION" ${DISABLED_ADMISSION:+--disable-admission-plugins=$DISABLED_ADMISSION} \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$DIR/sa.pub" --service-account-signing-key-file="$DIR/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 \
  --endpoint-reconciler-type=none \
  --allow-privileged=true --profiling=false -v=1 ${NODEKIT_APISERVER_EXTRA_ARGS:-}
deadline=$((SECONDS + TIMEOUT))
until api_ready; do
  alive kube-apiserver || { tail -30 "$DIR/kube-apiserver.log" >&2; die "kube-apiserver exited; see $DIR/kube-apiserver.log"; }
  (( SECONDS < deadline )) || { tail -30 "$DIR/kube-apiserver.log" >&2
    die "kube-apiserver not ready (/readyz) after ${TIMEOUT}s; see $DIR/kube-apiserver.log"; }
  sleep 0.1
done
log "kube-apiserver ready in $((SECONDS - t0))s (pid $(pid_of kube-apiserver)) at https://127.0.0.1:$API_PORT"
write_outputs
log "for the tests: . $DIR/env"
echo "$DIR/kubeconfig"
