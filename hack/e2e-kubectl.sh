#!/usr/bin/env bash
# e2e-kubectl.sh - a black-box run of the reference agent in cluster mode, driven and
# checked only with kubectl, as a user would (issue #15): the agent binary runs as its
# own process on the real containerd and the real kube-apiserver (hack/containerd-up.sh,
# hack/apiserver-up.sh) with the node's kubeconfig, and kubectl, with the admin
# kubeconfig, sees:
#   the Node registered and Ready, its labels and InternalIP 127.0.0.1, its Lease renewed;
#   the static pod's mirror pod Running and Ready; an API pod (hostNetwork, its port
#   from a ConfigMap through env, a readiness probe, ConfigMap and Secret volumes) Running
#   and Ready, with the kubelet's events in "kubectl describe"; the ConfigMap's update
#   reaching the volume (read on the node's own disk, under --root-dir); the pod deleted
#   with its grace period and gone, after kubectl debug ran an ephemeral container in it
#   (targeting its container: terminated 0 in status.ephemeralContainerStatuses, its
#   output in kubectl logs -c, the pod's container not restarted); a 30 s kube-apiserver
#   outage (only kube-apiserver is killed, etcd keeps running) during which the agent's
#   /healthz stays ok and its /pods keeps the static pod Running (curl on 127.0.0.1:
#   kubectl has nothing to talk to);
#   after the restart the Lease renewed, the Node Ready and a new pod Running; the Node
#   deleted and registered again with a new UID.
# And the node API (issue #16): the agent serves --port over TLS, trusting the apiserver's
# kubelet-client certificate through --client-ca-file, with webhook authentication and
# authorization (the v1beta1 defaults); through the apiserver, kubectl logs (-f,
# --previous), kubectl exec (output, stdin, a terminal, exit codes), kubectl attach and
# kubectl port-forward work; called directly, the node refuses anonymous requests, a
# token the apiserver does not know, and exec by a user without nodes/proxy (the node's
# own identity), and lets the admin in.
# Ends with one PASS line with the time of each step; on a failure it says what was
# expected and what kubectl showed, with the object's YAML and the agent log's tail.
#
# Usage:  hack/e2e-kubectl.sh        (as root; hack/test.sh runs it after the Go tests)
#
# Env (all optional):
#   KUBECTL              kubectl to use (default: kubectl from PATH). When it is not found,
#                        kubectl v$NODEKIT_K8S_VERSION is built from the Go module proxy
#                        (hack/lib-k8s-build.sh; minutes when cold) into the cache that
#                        hack/apiserver-up.sh uses: ${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-
#                        $HOME/.cache}/nodekit-bins}/k8s-v$NODEKIT_K8S_VERSION/kubectl
#   NODEKIT_E2E_DIR      work dir (default /tmp/nodekit-e2e-kubectl): agent binary and log,
#                        manifests, --root-dir, --pod-logs-dir; wiped at the start, removed
#                        after a pass (unless NODEKIT_E2E_KEEP=1), kept after a failure
#   NODEKIT_E2E_OUTAGE   seconds without the kube-apiserver (default 30)
#   NODEKIT_K8S_BIN_DIR, NODEKIT_K8S_VERSION, NODEKIT_APISERVER_DIR, NODEKIT_CONTAINERD_DIR:
#                        as for hack/apiserver-up.sh and hack/containerd-up.sh
#
# Holds an exclusive flock on $NODEKIT_APISERVER_DIR/tests.lock for the whole run (the
# Go integration tests take the same lock), so nothing else uses the node identity or
# restarts the apiserver meanwhile. Objects left by an interrupted run (an agent, pods
# bound to the node, the Node, its Lease, this script's ConfigMap and Secret) are removed
# first. On exit the agent's pods are deleted and the agent stops only once containerd
# has none of them left; then the API objects are deleted. Only 127.0.0.1 is used.
set -Eeuo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HACK=$PWD/hack
export PATH=/usr/local/go/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin

DIR=${NODEKIT_E2E_DIR:-/tmp/nodekit-e2e-kubectl}
OUTAGE=${NODEKIT_E2E_OUTAGE:-30}
K8S_VERSION=${NODEKIT_K8S_VERSION:-1.37.2}
BIN_CACHE=${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/k8s-v$K8S_VERSION
P=e2e-kubectl                # prefix of every object this script creates
NODE_LABEL=nodekit.dev/e2e=kubectl  # --node-labels, checked on the Node
NS=default

T0=${EPOCHREALTIME/./}
since() { local d=$(( (${EPOCHREALTIME/./} - $1) / 100000 )); echo "$((d / 10)).$((d % 10))s"; }
log() { echo "[e2e-kubectl +$(since "$T0")] $*" >&2; }
FAILED=0   # set once a failure has been reported, so the cleanup does not report it again
die() { FAILED=1; echo "[e2e-kubectl +$(since "$T0")] ERROR${STEP:+ [$STEP]}: $*" >&2; exit 1; }

STEP=''
[[ $(id -u) == 0 ]] || die "must run as root (containerd, cgroups)"
case $DIR in /tmp/?*|/var/tmp/?*) ;; *) die "NODEKIT_E2E_DIR must be under /tmp or /var/tmp (it is wiped): $DIR" ;; esac
[[ $OUTAGE =~ ^[0-9]+$ ]] || die "NODEKIT_E2E_OUTAGE must be a number of seconds: $OUTAGE"
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"
for t in curl jq ss flock setsid; do
  command -v $t >/dev/null && continue
  log "installing curl, jq, iproute2, util-linux with apt-get ($t is missing)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl jq iproute2 util-linux; } >/dev/null
  break
done

# ---------------------------------------------------------------- steps and failures
STEP_T0='' TIMES=()
step() { end_step; STEP=$1; STEP_T0=${EPOCHREALTIME/./}; log "== $1"; }
end_step() { if [[ -n $STEP ]]; then TIMES+=("$STEP $(since "$STEP_T0")"); fi; STEP=; }

SEEN=                # what the last check saw, for the failure message
OBJ=()               # kubectl get arguments of the object the current check looks at
AGENT_PID=
APISERVER_DOWN=0
fail() {
  FAILED=1
  {
    echo "FAIL [$STEP]: expected $1"
    echo "  observed: ${SEEN:-(nothing)}"
    if ((${#OBJ[@]})) && [[ $APISERVER_DOWN == 0 ]]; then
      echo "---- kubectl get ${OBJ[*]} -o yaml"
      k get "${OBJ[@]}" -o yaml 2>&1 | sed 's/^/  /' || true
    fi
    if [[ -s $DIR/agent.log ]]; then
      echo "---- agent log (last 40 lines of $DIR/agent.log)"
      tail -40 "$DIR/agent.log" | sed 's/^/  /'
    fi
  } >&2
  exit 1
}
# A command failing outside the checks ends the run through set -e; the cleanup names it
# (set -E: the trap also runs in functions, where k's kubectl calls fail).
ERR_AT=
trap 'ERR_AT="line $LINENO${FUNCNAME[0]:+ (in ${FUNCNAME[0]}, called from line ${BASH_LINENO[0]})}: $BASH_COMMAND"' ERR

# gone PID: the process has exited (a zombie counts: PID 1 reaps orphans slowly here).
gone() { local st; st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 0; [[ $st == Z* ]]; }
agent_alive() { [[ -n $AGENT_PID ]] && is_agent "$AGENT_PID"; }

# within SECONDS "what is expected" CHECK [ARGS...]: runs CHECK every 0.5 s until it
# succeeds; fails with the expectation, what CHECK last saw (SEEN) and the object.
within() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  SEEN=
  until "$@"; do
    if [[ -n $AGENT_PID ]] && ! agent_alive; then
      SEEN="the agent (pid $AGENT_PID) exited; last observed: ${SEEN:-(nothing)}"; fail "$what"
    fi
    ((SECONDS < deadline)) || fail "$what (within ${secs}s)"
    sleep 0.5
  done
}

# ---------------------------------------------------------------- kubectl
k() { "$KUBECTL" --kubeconfig "$NODEKIT_KUBECONFIG" --request-timeout=10s "$@"; }
# jp ARGS... JSONPATH: kubectl get ARGS -o jsonpath=JSONPATH, errors in the output
jp() { local path=${*: -1}; k get "${@:1:$#-1}" -o "jsonpath=$path" 2>&1; }

step kubectl
KUBECTL=${KUBECTL:-kubectl}
if command -v "$KUBECTL" >/dev/null; then
  KUBECTL=$(command -v "$KUBECTL")
else
  kubectl_ok() { [[ -x $BIN_CACHE/kubectl ]] &&
    "$BIN_CACHE/kubectl" version --client 2>/dev/null | grep -qx "Client Version: v$K8S_VERSION"; }
  if kubectl_ok; then
    log "$KUBECTL not found; using $BIN_CACHE/kubectl"
  else
    log "$KUBECTL not found; building kubectl v$K8S_VERSION from the Go module proxy into $BIN_CACHE (cold: minutes)"
    # shellcheck source=hack/lib-k8s-build.sh disable=SC1091  # checked on its own
    . "$HACK/lib-k8s-build.sh"
    k8s_build "$K8S_VERSION" "$BIN_CACHE" k8s.io/kubernetes/cmd/kubectl || die "building kubectl failed"
    kubectl_ok || die "$BIN_CACHE/kubectl does not say Client Version: v$K8S_VERSION"
  fi
  KUBECTL=$BIN_CACHE/kubectl
fi
log "kubectl: $KUBECTL ($("$KUBECTL" version --client 2>/dev/null | head -1))"

# ---------------------------------------------------------------- stale state, agent
# is_agent PID: a running process whose command line names $DIR (not a reused pid).
is_agent() { [[ $1 =~ ^[0-9]+$ && -r /proc/$1/cmdline ]] && ! gone "$1" &&
  tr '\0' ' ' < "/proc/$1/cmdline" | grep -qF -- "$DIR/"; }
# stop_agent PID: SIGTERM, SIGKILL after 15 s; only an is_agent pid.
stop_agent() {
  local pid=$1 i
  is_agent "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 150); do gone "$pid" && return 0; sleep 0.1; done
  log "agent (pid $pid) still running 15s after SIGTERM; SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}
# Everything from here on holds the lock: another run of this script (whose agent and
# work dir are removed below) or a Go test using the apiserver is waited for.
step lock
APIDIR=${NODEKIT_APISERVER_DIR:-/tmp/nodekit-apiserver}
mkdir -p "$APIDIR"
# fd 8 holds the lock; every process that may outlive this script gets it closed (8>&-).
exec 8>"$APIDIR/tests.lock"
if ! flock -n 8; then
  log "waiting for $APIDIR/tests.lock (held by a Go integration test or another run of this script)"
  flock -w 1200 8 || die "$APIDIR/tests.lock still held after 20 min"
fi

step agent-build
if [[ -s $DIR/agent.pid ]] && is_agent "$(<"$DIR/agent.pid")"; then
  log "stopping the agent of an earlier run (pid $(<"$DIR/agent.pid"))"
  stop_agent "$(<"$DIR/agent.pid")"
fi
rm -rf --one-file-system "$DIR"
mkdir -p "$DIR/manifests" "$DIR/root" "$DIR/logs"
CGO_ENABLED=0 go build -tags grpcnotrace -o "$DIR/kubelet" ./examples/kubelet

# ---------------------------------------------------------------- real parts
step containerd+apiserver
if [[ -z ${NODEKIT_K8S_BIN_DIR:-} && -d ../shared/k8s-bin ]]; then
  NODEKIT_K8S_BIN_DIR=$(cd ../shared/k8s-bin && pwd)
  export NODEKIT_K8S_BIN_DIR
fi
bash "$HACK/containerd-up.sh" 8>&- >/dev/null 2>>"$DIR/setup.log" ||
  { tail -20 "$DIR/setup.log" >&2; die "hack/containerd-up.sh failed"; }
# shellcheck disable=SC1091
. "${NODEKIT_CONTAINERD_DIR:-/tmp/nodekit-containerd}/env"
apiserver_up() { bash "$HACK/apiserver-up.sh" 8>&- >/dev/null 2>>"$DIR/setup.log" ||
  { tail -20 "$DIR/setup.log" >&2; die "hack/apiserver-up.sh failed"; }; }
apiserver_up
# shellcheck disable=SC1091
. "$APIDIR/env"
NODE=$NODEKIT_NODE_NAME
MIRROR=$P-static-$NODE
CTR=("${NODEKIT_CTR:-ctr}" -a "$NODEKIT_CONTAINERD_SOCK" -n k8s.io)

# running_leftovers: ids of running containerd tasks (sandboxes and containers) of the
# pods whose sandboxes carry this node's label.
running_leftovers() {
  local sb uid running ids=()
  # (2>/dev/null: a container listed may be removed before it is looked at)
  for sb in $("${CTR[@]}" containers ls -q "labels.\"nodekit.dev/node\"==$NODE" 2>/dev/null); do
    ids+=("$sb")
    uid=$("${CTR[@]}" containers info "$sb" 2>/dev/null | jq -r '.Labels["io.kubernetes.pod.uid"] // empty')
    # shellcheck disable=SC2207
    [[ -z $uid ]] || ids+=($("${CTR[@]}" containers ls -q "labels.\"io.kubernetes.pod.uid\"==$uid" 2>/dev/null))
  done
  ((${#ids[@]})) || return 0
  running=$("${CTR[@]}" tasks ls 2>/dev/null | awk '$3 == "RUNNING" {print $1}')
  printf '%s\n' "${ids[@]}" | sort -u | grep -Fxf <(echo "$running") || true
}

# delete_stale: what this script or an interrupted run (of it or of the Go e2e) left:
# pods bound to the node (force: no kubelet would confirm), the Node, its Lease, this
# script's ConfigMap and Secret.
delete_stale() {
  local pods
  pods=$(k get pods -A --field-selector "spec.nodeName=$NODE" -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}')
  local p
  for p in $pods; do
    k -n "${p%%/*}" delete pod "${p#*/}" --grace-period=0 --force --ignore-not-found >/dev/null 2>&1 || true
  done
  k -n "$NS" delete configmap "$P-cfg" --ignore-not-found >/dev/null
  k -n "$NS" delete secret "$P-secret" --ignore-not-found >/dev/null
  k delete node "$NODE" --ignore-not-found >/dev/null
  k -n kube-node-lease delete lease "$NODE" --ignore-not-found >/dev/null
  [[ -z $pods ]] || log "deleted stale pods bound to $NODE: $(echo "$pods" | tr '\n' ' ')"
}
step delete-stale
delete_stale

# ---------------------------------------------------------------- cleanup on exit
cleanup() {
  local rc=$? left
  set +e
  if [[ -n $INTERRUPTED ]]; then
    log "interrupted by $INTERRUPTED in step $STEP; cleaning up"
  elif ((rc && !FAILED)); then
    echo "FAIL [$STEP]: exit status $rc${ERR_AT:+ from $ERR_AT}" >&2
    [[ ! -s $DIR/agent.log ]] || { echo "---- agent log (last 40 lines)"; tail -40 "$DIR/agent.log" | sed 's/^/  /'; } >&2
  fi
  end_step
  if [[ $APISERVER_DOWN == 1 ]]; then
    log "cleanup: starting the kube-apiserver again"; bash "$HACK/apiserver-up.sh" 8>&- >/dev/null 2>>"$DIR/setup.log"
    APISERVER_DOWN=0
  fi
  if agent_alive; then
    # The agent leaves its pods running when it stops: delete them first, let it kill them.
    rm -f "$DIR/manifests/"*
    k -n "$NS" delete pod "$P-web" "$P-after-outage" "$P-cat" "$P-crash" --ignore-not-found --wait=false >/dev/null 2>&1
    local deadline=$((SECONDS + 40))
    while left=$(running_leftovers) && [[ -n $left ]] && ((SECONDS < deadline)) && agent_alive; do sleep 0.5; done
    [[ -z $left ]] || { log "cleanup: the agent did not stop its pods within 40s: $(echo "$left" | tr '\n' ' ')"; ((rc)) || rc=1; }
    stop_agent "$AGENT_PID"
  fi
  # Anything still running (the agent died, or did not stop them): kill it, so no
  # container outlives the run; the next agent on this node removes the sandboxes.
  left=$(running_leftovers)
  if [[ -n $left ]]; then
    log "cleanup: killing containers left running: $(echo "$left" | tr '\n' ' ')"
    for id in $left; do "${CTR[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1; done
  fi
  delete_stale 2>/dev/null
  if ((rc == 0)) && [[ ${NODEKIT_E2E_KEEP:-0} != 1 ]]; then
    rm -rf --one-file-system "$DIR"
  else
    log "kept $DIR (agent.log, setup.log, root/, logs/)"
  fi
  exit "$rc"
}
INTERRUPTED=
trap cleanup EXIT
trap 'INTERRUPTED=SIGINT; exit 130' INT
trap 'INTERRUPTED=SIGTERM; exit 143' TERM

# ---------------------------------------------------------------- the agent
USED_PORTS=" 16443 23790 23800 "
# free_port VAR: a port nothing listens on in 24000-31999, not handed out before.
free_port() {
  local p i
  for i in $(seq 1 500); do
    p=$((24000 + RANDOM % 8000))
    [[ $USED_PORTS == *" $p "* ]] && continue
    ss -Hltn "sport = :$p" | grep -q . && continue
    USED_PORTS+="$p "; printf -v "$1" %s "$p"; return 0
  done
  die "no free port on 127.0.0.1 after $i tries"
}
free_port API_PORT; free_port HEALTHZ_PORT; free_port STATIC_PORT; free_port WEB_PORT; free_port RO_PORT; free_port FWD_PORT

step agent-start
cat > "$DIR/manifests/static.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $P-static, namespace: $NS}
spec:
  hostNetwork: true
  containers:
  - name: srv
    image: nodekit.local/testbin:1
    imagePullPolicy: Never
    args: [serve]
    env: [{name: PORT, value: "$STATIC_PORT"}]
    readinessProbe: {httpGet: {path: /readyz, port: $STATIC_PORT}, periodSeconds: 1}
EOF
AGENT_ARGS=(--runtime remote --container-runtime-endpoint "$NODEKIT_CRI_ENDPOINT"
  --kubeconfig "$NODEKIT_NODE_KUBECONFIG" --hostname-override "$NODE" --node-ip 127.0.0.1
  --node-labels "$NODE_LABEL"
  --pod-manifest-path "$DIR/manifests" --file-check-frequency 1s --sync-frequency 3s
  --root-dir "$DIR/root" --pod-logs-dir "$DIR/logs" --containers-log-dir "$DIR/containers" --cgroups-per-qos=false
  --address 127.0.0.1 --port "$API_PORT" --read-only-port "$RO_PORT" --healthz-port "$HEALTHZ_PORT"
  --client-ca-file "$NODEKIT_CLIENT_CA"
  --node-status-update-frequency 2s --node-lease-duration-seconds 8)
# The kubelet (and the agent) refuse a cgroup v1 host unless told otherwise.
[[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] || AGENT_ARGS+=(--fail-cgroupv1=false)
# Its own session (a ^C of this script reaches only the script, whose cleanup stops it);
# the pid file is written by the shell that then execs the agent.
# shellcheck disable=SC2016  # $$ and $@ are the inner shell's
setsid bash -c 'echo $$ > "$0"; exec "$@"' "$DIR/agent.pid" "$DIR/kubelet" "${AGENT_ARGS[@]}" \
  > "$DIR/agent.log" 2>&1 < /dev/null 8>&- &
for _ in $(seq 1 50); do [[ -s $DIR/agent.pid ]] && break; sleep 0.1; done
AGENT_PID=$(<"$DIR/agent.pid")
healthz() { SEEN=$(curl -sS --max-time 2 "http://127.0.0.1:$HEALTHZ_PORT/healthz" 2>&1) && [[ $SEEN == ok ]]; }
within 20 "the agent's /healthz on 127.0.0.1:$HEALTHZ_PORT to say ok" healthz
log "agent pid $AGENT_PID: --port $API_PORT (TLS) --read-only-port $RO_PORT --healthz-port $HEALTHZ_PORT, log $DIR/agent.log"

# ---------------------------------------------------------------- node, lease
step node-registered
OBJ=(node "$NODE")
node_uid() { SEEN=$(jp node "$NODE" '{.metadata.uid}') && [[ -n $SEEN ]]; }
within 30 "kubectl get node $NODE to find the Node" node_uid
NODE_UID=$SEEN
node_ready() { SEEN=$(jp node "$NODE" '{.status.conditions[?(@.type=="Ready")].status}') && [[ $SEEN == True ]]; }
within 30 "node $NODE Ready=True" node_ready
ARCH=$(go env GOARCH)
SEEN=$(jp node "$NODE" '{.metadata.labels.kubernetes\.io/hostname} {.metadata.labels.kubernetes\.io/os} {.metadata.labels.kubernetes\.io/arch} {.metadata.labels.nodekit\.dev/e2e}')
[[ $SEEN == "$NODE linux $ARCH kubectl" ]] ||
  fail "labels kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch, nodekit.dev/e2e = '$NODE linux $ARCH kubectl'"
SEEN=$(jp node "$NODE" '{.status.addresses[?(@.type=="InternalIP")].address}')
[[ $SEEN == 127.0.0.1 ]] || fail "InternalIP 127.0.0.1"
SEEN=$(jp node "$NODE" '{.status.nodeInfo.containerRuntimeVersion} {.status.daemonEndpoints.kubeletEndpoint.Port}')
[[ $SEEN == "containerd://"*" $API_PORT" ]] || fail "containerRuntimeVersion containerd://..., kubelet port $API_PORT"
log "node $NODE registered (uid $NODE_UID), Ready, InternalIP 127.0.0.1, $SEEN"

step lease
OBJ=(-n kube-node-lease lease "$NODE")
lease_renew() { SEEN=$(jp -n kube-node-lease lease "$NODE" '{.spec.renewTime}') && [[ $SEEN == 20* ]]; }
within 20 "a Lease $NODE in kube-node-lease with a renewTime" lease_renew
R1=$SEEN
SEEN=$(jp -n kube-node-lease lease "$NODE" '{.spec.holderIdentity} {.spec.leaseDurationSeconds}')
[[ $SEEN == "$NODE 8" ]] || fail "holderIdentity $NODE, leaseDurationSeconds 8"
# renewTime is a MicroTime (2006-01-02T15:04:05.000000Z): ordered as a string.
lease_after() { lease_renew && [[ $SEEN > $1 ]]; }
within 15 "the lease renewed after $R1 (every 2 s: a quarter of 8 s)" lease_after "$R1"
log "lease renewed: $R1 -> $SEEN"

# ---------------------------------------------------------------- mirror pod
step mirror-pod
OBJ=(-n "$NS" pod "$MIRROR")
running_ready() { # NAME
  SEEN=$(jp -n "$NS" pod "$1" '{.status.phase} {.status.conditions[?(@.type=="Ready")].status}') &&
    [[ $SEEN == "Running True" ]]
}
mirror_ok() {
  local ann
  ann=$(jp -n "$NS" pod "$MIRROR" '{.metadata.annotations.kubernetes\.io/config\.mirror}') || { SEEN=$ann; return 1; }
  [[ -n $ann ]] || { SEEN="no annotation kubernetes.io/config.mirror"; return 1; }
  running_ready "$MIRROR"
}
within 30 "mirror pod $NS/$MIRROR with annotation kubernetes.io/config.mirror, phase Running, Ready=True" mirror_ok
SEEN=$(jp -n "$NS" pod "$MIRROR" '{.spec.nodeName} {.status.hostIP} {.status.podIP}')
[[ $SEEN == "$NODE 127.0.0.1 127.0.0.1" ]] || fail "mirror pod on $NODE, hostIP and podIP 127.0.0.1"
log "mirror pod $MIRROR Running and Ready"

# ---------------------------------------------------------------- an API pod
step api-pod
OBJ=(-n "$NS" configmap "$P-cfg")
k -n "$NS" create configmap "$P-cfg" --from-literal=greeting=hello --from-literal=port="$WEB_PORT" >/dev/null
k -n "$NS" create secret generic "$P-secret" --from-literal=token=abc >/dev/null
OBJ=(-n "$NS" pod "$P-web")
k create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $P-web, namespace: $NS}
spec:
  nodeName: $NODE
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  volumes:
  - {name: cfg, configMap: {name: $P-cfg}}
  - {name: sec, secret: {secretName: $P-secret}}
  containers:
  - name: web
    image: nodekit.local/testbin:1
    imagePullPolicy: Never
    args: [serve]
    # The port comes from the ConfigMap: Ready only if env from the API worked.
    env: [{name: PORT, valueFrom: {configMapKeyRef: {name: $P-cfg, key: port}}}]
    volumeMounts: [{name: cfg, mountPath: /etc/cfg}, {name: sec, mountPath: /etc/sec}]
    readinessProbe: {httpGet: {path: /readyz, port: $WEB_PORT}, periodSeconds: 1}
EOF
within 30 "pod $P-web phase Running, Ready=True (readiness probe on the ConfigMap's port $WEB_PORT)" running_ready "$P-web"
SEEN=$(jp -n "$NS" pod "$P-web" '{.status.podIP} {.status.containerStatuses[0].ready} {.status.containerStatuses[0].containerID}')
[[ $SEEN == "127.0.0.1 true containerd://"* ]] || fail "podIP 127.0.0.1, container ready, containerID containerd://..."
started_event() {
  SEEN=$(k -n "$NS" describe pod "$P-web" 2>&1) || return 1
  grep -qE '^ +Normal +Started +.* kubelet +Started container web' <<<"$SEEN"
}
within 20 "kubectl describe pod $P-web to show the kubelet's 'Started container web' event" started_event
log "pod $P-web Running and Ready; describe: $(grep -E '^ +Normal +Started ' <<<"$SEEN" | tr -s ' ' | head -1)"

step volumes
UID_WEB=$(jp -n "$NS" pod "$P-web" '{.metadata.uid}')
VOLS=$DIR/root/pods/$UID_WEB/volumes
file_is() { # FILE CONTENT
  SEEN="$1: $(cat "$1" 2>&1)"; [[ -f $1 && $(<"$1") == "$2" ]]
}
within 10 "the ConfigMap's greeting 'hello' in the pod's volume" file_is "$VOLS/kubernetes.io~configmap/cfg/greeting" hello
within 10 "the Secret's token 'abc' in the pod's volume" file_is "$VOLS/kubernetes.io~secret/sec/token" abc
OBJ=(-n "$NS" configmap "$P-cfg")
k -n "$NS" patch configmap "$P-cfg" --type merge -p '{"data":{"greeting":"hi"}}' >/dev/null
within 30 "the ConfigMap's update (greeting 'hi') in the running pod's volume (--sync-frequency 3s)" \
  file_is "$VOLS/kubernetes.io~configmap/cfg/greeting" hi
log "volumes under $VOLS: configmap and secret content, ConfigMap update seen"

# ---------------------------------------------------------------- the node API (#16)
step node-api-auth
OBJ=()
# code_of URL [curl args...]: the HTTP status of a direct call to the agent's --port.
code_of() { curl -sk -o "$DIR/body" -w '%{http_code}' --max-time 5 "${@:2}" "https://127.0.0.1:$API_PORT$1"; }
SEEN=$(code_of /pods) && [[ $SEEN == 401 ]] || fail "an anonymous GET /pods refused with 401 (anonymous-auth is off)"
SEEN=$(code_of /pods -H "Authorization: Bearer not-a-token-the-apiserver-knows") && [[ $SEEN == 401 ]] ||
  fail "a token the apiserver does not know refused with 401 (TokenReview)"
SEEN=$(code_of "/exec/$NS/$P-web/web?command=/testbin&command=echo&output=1" -X POST \
  -H "Authorization: Bearer $(<"$APIDIR/node.token")")
[[ $SEEN == 403 ]] && grep -q "Forbidden (user=system:node:$NODE, verb=create, resource=nodes, subresource(s)=\[proxy\])" "$DIR/body" ||
  { SEEN="$SEEN $(<"$DIR/body")"; fail "exec by the node's own identity (no nodes/proxy) refused with the kubelet's 403"; }
SEEN=$(code_of /pods -H "Authorization: Bearer $(<"$APIDIR/admin.token")") && [[ $SEEN == 200 ]] ||
  fail "the admin's token (system:masters: nodes/proxy allowed by SubjectAccessReview) gets /pods"
log "direct calls: anonymous 401, unknown token 401, the node's identity 403 for exec, the admin 200"

step kubectl-logs-exec
OBJ=(-n "$NS" pod "$P-web")
SEEN=$(k -n "$NS" logs "$P-web" 2>&1) && [[ $SEEN == *"listening on 127.0.0.1:$WEB_PORT"* ]] ||
  fail "kubectl logs $P-web to show 'listening on 127.0.0.1:$WEB_PORT'"
SEEN=$(k -n "$NS" logs "$P-web" --timestamps --tail=1 2>&1) && [[ $SEEN =~ ^20[0-9-]+T[0-9:.]+Z\ listening ]] ||
  fail "kubectl logs --timestamps --tail=1: one line with its time"
SEEN=$(k -n "$NS" exec "$P-web" -- /testbin echo hello from exec 2>&1) && [[ $SEEN == "hello from exec" ]] ||
  fail "kubectl exec $P-web -- /testbin echo hello from exec"
SEEN=$(echo "typed on stdin" | k -n "$NS" exec -i "$P-web" -- /testbin cat 2>&1) && [[ $SEEN == "typed on stdin" ]] ||
  fail "kubectl exec -i (stdin through /testbin cat)"
rc=0; SEEN=$(k -n "$NS" exec "$P-web" -- /testbin exit 3 2>&1) || rc=$?
[[ $rc == 3 ]] || { SEEN="exit status $rc: $SEEN"; fail "kubectl exec -- /testbin exit 3 to exit 3"; }
rc=0; SEEN=$(k -n "$NS" exec "$P-web" -- /no/such/binary 2>&1) || rc=$?
((rc != 0)) && [[ $SEEN == *"no such file or directory"* || $SEEN == *"not found"* ]] ||
  { SEEN="exit status $rc: $SEEN"; fail "kubectl exec of a missing binary to fail saying so"; }
# A terminal: script(1) gives kubectl one, so -t is honoured.
SEEN=$(script -qec "$KUBECTL --kubeconfig $NODEKIT_KUBECONFIG -n $NS exec -it $P-web -- /testbin tty" /dev/null 2>&1 | tr -d '\r') &&
  [[ $SEEN == *"/dev/pts/"* ]] || fail "kubectl exec -it -- /testbin tty to print a /dev/pts terminal"
log "kubectl logs, exec (output, stdin, tty '${SEEN//[^[:print:]]/}', exit code 3, missing binary) through the apiserver"

step kubectl-port-forward
k -n "$NS" port-forward --address 127.0.0.1 "pod/$P-web" "$FWD_PORT:$WEB_PORT" > "$DIR/port-forward.log" 2>&1 8>&- &
FWD_PID=$!
fwd_ok() { SEEN=$(curl -sS --max-time 2 "http://127.0.0.1:$FWD_PORT/readyz" 2>&1) && [[ $SEEN == ready ]]; }
within 20 "curl through kubectl port-forward 127.0.0.1:$FWD_PORT -> $P-web:$WEB_PORT to answer /readyz" fwd_ok
for _ in 1 2 3; do fwd_ok || fail "a second request through the same port-forward"; done
kill "$FWD_PID" 2>/dev/null; wait "$FWD_PID" 2>/dev/null || true
log "kubectl port-forward: 4 requests to $P-web:$WEB_PORT through 127.0.0.1:$FWD_PORT"

step kubectl-attach-logs-f
OBJ=(-n "$NS" pod "$P-cat")
k create -f - >/dev/null <<EOP
apiVersion: v1
kind: Pod
metadata: {name: $P-cat, namespace: $NS}
spec:
  nodeName: $NODE
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: cat, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [cat], stdin: true}
EOP
within 30 "pod $P-cat Running" running_ready "$P-cat"
k -n "$NS" logs -f "$P-cat" > "$DIR/logs-f.out" 2>&1 8>&- &
LOGS_PID=$!
sleep 1
# attach -i: what it sends reaches the process's stdin, what the process prints comes back.
SEEN=$( (echo "hello through attach"; sleep 3) | timeout 20 "$KUBECTL" --kubeconfig "$NODEKIT_KUBECONFIG" -n "$NS" \
  attach -i "$P-cat" -c cat 2>&1 8>&- || true)
[[ $SEEN == *"hello through attach"* ]] || fail "kubectl attach -i $P-cat to echo what it sent"
follow_ok() { SEEN=$(cat "$DIR/logs-f.out"); [[ $SEEN == *"hello through attach"* ]]; }
within 10 "kubectl logs -f $P-cat (started before) to show the line written through attach" follow_ok
kill "$LOGS_PID" 2>/dev/null; wait "$LOGS_PID" 2>/dev/null || true
log "kubectl attach -i echoed a line; kubectl logs -f followed it"

step kubectl-logs-previous
OBJ=(-n "$NS" pod "$P-crash")
k create -f - >/dev/null <<EOP
apiVersion: v1
kind: Pod
metadata: {name: $P-crash, namespace: $NS}
spec:
  nodeName: $NODE
  terminationGracePeriodSeconds: 2
  hostNetwork: true
  containers:
  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [exit, "3"]}
EOP
restarted() { SEEN=$(jp -n "$NS" pod "$P-crash" '{.status.containerStatuses[0].restartCount}') && [[ ${SEEN:-0} -ge 1 ]]; }
within 40 "pod $P-crash restarted at least once" restarted
SEEN=$(k -n "$NS" logs --previous "$P-crash" 2>&1) && [[ $SEEN == "exiting with 3" ]] ||
  fail "kubectl logs --previous $P-crash to show the previous instance's 'exiting with 3'"
k -n "$NS" delete pod "$P-cat" "$P-crash" --wait=false >/dev/null
log "kubectl logs --previous: '$SEEN'"

step kubectl-debug
OBJ=(-n "$NS" pod "$P-web")
WEB_ID=$(jp -n "$NS" pod "$P-web" '{.status.containerStatuses[0].containerID}')
# An ephemeral container in the running pod, in the process namespace of its container.
SEEN=$(k -n "$NS" debug "$P-web" --image=nodekit.local/testbin:1 --image-pull-policy=Never --target=web \
  --container=debugger -- /testbin echo debug-hello 2>&1) ||
  fail "kubectl debug $P-web --target=web to add the ephemeral container debugger"
debug_done() {
  SEEN=$(jp -n "$NS" pod "$P-web" '{.status.ephemeralContainerStatuses[?(@.name=="debugger")].state.terminated.exitCode}') &&
    [[ $SEEN == 0 ]]
}
within 30 "the ephemeral container debugger terminated with exit code 0 in status.ephemeralContainerStatuses" debug_done
SEEN=$(k -n "$NS" logs "$P-web" -c debugger 2>&1) && [[ $SEEN == debug-hello ]] ||
  fail "kubectl logs $P-web -c debugger to show debug-hello"
SEEN=$(jp -n "$NS" pod "$P-web" '{.status.phase} {.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].containerID}')
[[ $SEEN == "Running 0 $WEB_ID" ]] || fail "pod $P-web still Running, its container web not restarted ($WEB_ID)"
log "kubectl debug: the ephemeral container debugger ran in $P-web and logged '$(k -n "$NS" logs "$P-web" -c debugger 2>&1)'"

step delete-pod
OBJ=(-n "$NS" pod "$P-web")
k -n "$NS" delete pod "$P-web" --wait=false >/dev/null
pod_gone() { SEEN=$(k -n "$NS" get pod "$1" -o name 2>&1) && return 1; [[ $SEEN == *NotFound* ]]; }
within 30 "pod $P-web gone from the API after kubectl delete (grace period 10s)" pod_gone "$P-web"
log "pod $P-web deleted and gone"

# ---------------------------------------------------------------- apiserver outage
step "outage-${OUTAGE}s"
OBJ=()
ours() { [[ $1 =~ ^[0-9]+$ && -r /proc/$1/cmdline ]] && tr '\0' ' ' < "/proc/$1/cmdline" | grep -qF -- "$APIDIR/"; }
API_PID=$(cat "$APIDIR/kube-apiserver.pid" 2>/dev/null || true)
ETCD_PID=$(cat "$APIDIR/etcd.pid" 2>/dev/null || true)
ours "$API_PID" || die "no kube-apiserver of $APIDIR running (pid file: '$API_PID')"
APISERVER_DOWN=1
kill -KILL "$API_PID"
for _ in $(seq 1 100); do gone "$API_PID" && break; sleep 0.1; done
OUT_T0=$SECONDS
if SEEN=$(k get --raw /readyz --request-timeout=3s 2>&1); then fail "kubectl unable to reach the killed kube-apiserver"; fi
log "kube-apiserver (pid $API_PID) killed; etcd (pid $ETCD_PID) keeps running; kubectl: $(tail -1 <<<"$SEEN")"
static_running() {
  SEEN=$(curl -sS --max-time 2 "http://127.0.0.1:$RO_PORT/pods" 2>&1 |
         jq -r --arg n "$MIRROR" '.items[] | select(.metadata.name == $n) | .status.phase' 2>&1) && [[ $SEEN == Running ]]
}
polls=0
while ((SECONDS - OUT_T0 < OUTAGE)); do
  healthz || fail "the agent's /healthz (127.0.0.1:$HEALTHZ_PORT) ok during the outage ($((SECONDS - OUT_T0))s in)"
  static_running || fail "the agent's read-only /pods (127.0.0.1:$RO_PORT) to list $MIRROR Running during the outage ($((SECONDS - OUT_T0))s in)"
  SEEN=$(curl -sS --max-time 2 "http://127.0.0.1:$STATIC_PORT/readyz" 2>&1) ||
    fail "the static pod serving on 127.0.0.1:$STATIC_PORT during the outage ($((SECONDS - OUT_T0))s in)"
  agent_alive || { SEEN="exited"; fail "the agent running during the outage"; }
  polls=$((polls + 1))
  sleep 2
done
ours "$ETCD_PID" || { SEEN="etcd pid $ETCD_PID gone"; fail "etcd running through the outage"; }
log "${OUTAGE}s without the apiserver: /healthz ok, $MIRROR Running, in $polls polls; restarting kube-apiserver"
apiserver_up
APISERVER_DOWN=0
BACK=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
[[ $(cat "$APIDIR/etcd.pid") == "$ETCD_PID" ]] || { SEEN="etcd pid $(cat "$APIDIR/etcd.pid")"; fail "etcd (pid $ETCD_PID) kept"; }
log "kube-apiserver back (pid $(cat "$APIDIR/kube-apiserver.pid")) at $BACK"

step recovery
OBJ=(-n kube-node-lease lease "$NODE")
within 30 "the lease renewed after the apiserver came back at $BACK" lease_after "$BACK"
log "lease renewed at $SEEN"
OBJ=(node "$NODE")
within 30 "node $NODE Ready=True after the outage" node_ready
OBJ=(-n "$NS" pod "$P-after-outage")
T_POD=$SECONDS
k create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $P-after-outage, namespace: $NS}
spec:
  nodeName: $NODE
  hostNetwork: true
  terminationGracePeriodSeconds: 5
  containers:
  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [sleep]}
EOF
# The agent's pod watch retries at most 10 s apart (kubeapi.WatchBackoff; the kubelet's
# are [30,60) s apart after a long outage), so a new pod is seen within about 10 s.
within 40 "pod $P-after-outage, created after the outage, Running and Ready (the pod watch retries at most 10s apart)" \
  running_ready "$P-after-outage"
T_POD=$((SECONDS - T_POD))
SEEN=$(jp -n "$NS" pod "$MIRROR" '{.status.phase} {.status.containerStatuses[0].restartCount}')
[[ $SEEN == "Running 0" ]] || fail "the mirror pod Running with no restart after the outage"
log "node Ready, $P-after-outage Running and Ready ${T_POD}s after its creation, $MIRROR Running without a restart"

# ---------------------------------------------------------------- node deleted
step node-reregistered
OBJ=(node "$NODE")
k delete node "$NODE" --wait=false >/dev/null
new_node() {
  if node_uid && [[ $SEEN != "$NODE_UID" ]]; then return 0; fi
  SEEN="uid ${SEEN:-none} (was $NODE_UID)"; return 1
}
within 30 "node $NODE registered again with a new UID" new_node
NEW_UID=$SEEN
within 30 "node $NODE Ready=True after registering again" node_ready
log "node $NODE registered again: uid $NODE_UID -> $NEW_UID, Ready"

end_step
summary=$(printf '%s, ' "${TIMES[@]}")
echo "PASS hack/e2e-kubectl.sh in $(since "$T0"): ${summary%, }"
