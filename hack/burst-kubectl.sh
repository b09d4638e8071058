#!/usr/bin/env bash
# burst-kubectl.sh - a burst of API pods created with kubectl, timed until every one is
# Running (issue #28: under such a burst, 18 of 100 hollow nodes never saw their pods).
#   hollow (default)  kube-apiserver + etcd (hack/apiserver-up.sh) and examples/hollownodes
#                     with $NODES nodes burst-hollow-<i> on fake runtimes; once all are
#                     Ready, one `kind: List` of $PODS pods per node (spec.nodeName set,
#                     registry.k8s.io/pause:3.10, which the fake "pulls" from no registry,
#                     terminationGracePeriodSeconds 0), created by `xargs -P$PARALLEL
#                     kubectl create -f`, one List per kubectl.
#   kubelet           the same apiserver, containerd (hack/containerd-up.sh) and the built
#                     examples/kubelet in cluster mode with hack/e2e-kubectl.sh's flags;
#                     $PODS hostNetwork pods (nodekit.local/testbin:1 sleep, imagePullPolicy
#                     Never) in ONE `kubectl create -f` of a List; once all are Running,
#                     they are deleted and the run waits until containerd runs none of them.
# The clock starts at the first create; every second the script asks whether a pod is
# not Running (progress every 15 s) until $DEADLINE, then prints one line "BURST <mode>:"
# with the figures (create time, time to all Running, hollownodes' RSS and CPU time, the
# load average). Past the deadline it prints the pods not Running per node, and fails.
# Both end with the node process's warnings and errors, the most frequent first.
# On exit: hollownodes stopped (it deletes its Nodes), or the agent stopped once its pods
# are gone from containerd, and its Node and Lease deleted; then the pods (grace 0) and
# the namespace burst-<n> of the run. $DIR keeps the logs until the next run.
#
# Usage:  hack/burst-kubectl.sh [hollow|kubelet]     (as root for kubelet: containerd)
#
# Env (all optional):
#   NODES, PODS          hollow nodes (default 100); pods per node (default 110)
#   PARALLEL             kubectl processes at a time in hollow mode (default 4)
#   DEADLINE             seconds from the first create until all Running (default 600)
#   HOLLOWNODES_BIN      a prebuilt examples/hollownodes (e.g. an older commit's) instead of
#                        this tree's; QUIT_ON_TIMEOUT=1 sends it SIGQUIT past the deadline,
#                        so that its goroutines are dumped into hollownodes.log
#   KUBECTL              kubectl (default: from PATH, else built as hack/e2e-kubectl.sh does)
#   NODEKIT_BURST_DIR    work dir (default /tmp/nodekit-burst), wiped at the start
#   NODEKIT_K8S_BIN_DIR, NODEKIT_K8S_VERSION, NODEKIT_APISERVER_DIR, NODEKIT_CONTAINERD_DIR:
#                        as for hack/apiserver-up.sh and hack/containerd-up.sh
# Holds the flock on $NODEKIT_APISERVER_DIR/tests.lock for the whole run, as
# hack/e2e-kubectl.sh and the Go integration tests do. Only 127.0.0.1 is used.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HACK=$PWD/hack
export PATH=/usr/local/go/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin

MODE=${1:-hollow}
NODES=${NODES:-100} PODS=${PODS:-110} PARALLEL=${PARALLEL:-4} DEADLINE=${DEADLINE:-600}
DIR=${NODEKIT_BURST_DIR:-/tmp/nodekit-burst}
APIDIR=${NODEKIT_APISERVER_DIR:-/tmp/nodekit-apiserver}
K8S_VERSION=${NODEKIT_K8S_VERSION:-1.37.2}
BIN_CACHE=${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/k8s-v$K8S_VERSION
LABEL=nodekit.dev/burst      # on this script's nodes, namespaces and pods
NS=burst-$RANDOM

now() { echo "${EPOCHREALTIME/./}"; }
secs() { local d=$((($(now) - $1) / 100000)); echo "$((d / 10)).$((d % 10))"; }
T0=$(now)
log() { echo "[burst-kubectl +$(secs "$T0")s] $*" >&2; }
die() { echo "[burst-kubectl +$(secs "$T0")s] ERROR: $*" >&2; exit 1; }

[[ $MODE == hollow || $MODE == kubelet ]] || die "usage: $0 [hollow|kubelet]"
for v in NODES PODS PARALLEL DEADLINE; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive number: ${!v}"; done
[[ $DIR == /tmp/?* || $DIR == /var/tmp/?* ]] || die "NODEKIT_BURST_DIR must be under /tmp or /var/tmp (it is wiped): $DIR"
[[ $MODE == hollow || $(id -u) == 0 ]] || die "kubelet mode must run as root (containerd)"
[[ -z ${HOLLOWNODES_BIN:-} || -x $HOLLOWNODES_BIN ]] || die "HOLLOWNODES_BIN is not an executable: $HOLLOWNODES_BIN"
for t in go jq flock setsid ss curl; do command -v $t >/dev/null || die "$t not found"; done

# ---------------------------------------------------------------- kubectl (as e2e-kubectl.sh)
KUBECTL=${KUBECTL:-kubectl}
if command -v "$KUBECTL" >/dev/null; then KUBECTL=$(command -v "$KUBECTL"); else
  KUBECTL=$BIN_CACHE/kubectl
  if ! "$KUBECTL" version --client 2>/dev/null | grep -qx "Client Version: v$K8S_VERSION"; then
    log "kubectl not found; building v$K8S_VERSION from the Go module proxy into $BIN_CACHE"
    # shellcheck source=hack/lib-k8s-build.sh disable=SC1091
    . "$HACK/lib-k8s-build.sh"; k8s_build "$K8S_VERSION" "$BIN_CACHE" k8s.io/kubernetes/cmd/kubectl || die "building kubectl failed"
  fi
fi
k() { "$KUBECTL" --kubeconfig "$NODEKIT_KUBECONFIG" --request-timeout=60s "$@"; }

# ---------------------------------------------------------------- processes
# gone PID: exited (a zombie counts); ours PID: running, its command line names $DIR.
gone() { local st; st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 0; [[ $st == Z* ]]; }
ours() { [[ $1 =~ ^[0-9]+$ && -r /proc/$1/cmdline ]] && ! gone "$1" &&
  tr '\0' ' ' < "/proc/$1/cmdline" | grep -qF -- "$DIR/"; }
stop() { # PID: SIGTERM, SIGKILL after 60 s; only one of ours
  local i; ours "$1" || return 0
  kill -TERM "$1" 2>/dev/null || true
  for i in $(seq 600); do gone "$1" && return 0; sleep 0.1; done
  log "pid $1 still running 60s after SIGTERM; SIGKILL"; kill -KILL "$1" 2>/dev/null || true
}
start() { # NAME CMD...: in its own session, log in $DIR/NAME.log; sets PID
  local name=$1; shift
  # shellcheck disable=SC2016  # $$ and $@ are the inner shell's
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$DIR/$name.pid" "$@" > "$DIR/$name.log" 2>&1 < /dev/null 8>&- &
  for _ in $(seq 50); do [[ -s $DIR/$name.pid ]] && break; sleep 0.1; done
  PID=$(<"$DIR/$name.pid")
}
PID='' NAME=''
alive_or_die() { ours "$PID" || { tail -30 "$DIR/$NAME.log" >&2; die "$NAME (pid $PID) exited; log $DIR/$NAME.log"; }; }
log_summary() { # warnings and errors of the node process, the most frequent messages first
  local f=$DIR/$NAME.log
  [[ -s $f ]] || return 0
  log "$NAME.log: $(grep -c 'level=ERROR' "$f" || true) errors, $(grep -c 'level=WARN' "$f" || true) warnings"
  grep -oE 'level=(WARN|ERROR) msg=("[^"]*"|[^ ]*)' "$f" | sort | uniq -c | sort -rn | head -8 | sed 's/^ */    /' >&2
}

# ---------------------------------------------------------------- lock, work dir, real parts
mkdir -p "$APIDIR"
exec 8>"$APIDIR/tests.lock"   # held until exit; closed (8>&-) for what may outlive the script
if ! flock -n 8; then log "waiting for $APIDIR/tests.lock"; flock -w 1200 8 || die "$APIDIR/tests.lock held for 20 min"; fi
for f in "$DIR"/*.pid; do [[ -s $f ]] && ours "$(<"$f")" && { log "stopping an earlier run's $f"; stop "$(<"$f")"; }; done
rm -rf --one-file-system "$DIR"; mkdir -p "$DIR/lists" "$DIR/manifests" "$DIR/root" "$DIR/logs"

if [[ -z ${NODEKIT_K8S_BIN_DIR:-} && -d ../shared/k8s-bin ]]; then
  NODEKIT_K8S_BIN_DIR=$(cd ../shared/k8s-bin && pwd); export NODEKIT_K8S_BIN_DIR
fi
if [[ $MODE == kubelet ]]; then
  NAME=agent; CGO_ENABLED=0 go build -tags grpcnotrace -o "$DIR/kubelet" ./examples/kubelet
  bash "$HACK/containerd-up.sh" 8>&- >/dev/null 2>>"$DIR/setup.log" || { tail -20 "$DIR/setup.log" >&2; die "hack/containerd-up.sh failed"; }
  # shellcheck disable=SC1091
  . "${NODEKIT_CONTAINERD_DIR:-/tmp/nodekit-containerd}/env"
  CTR=("${NODEKIT_CTR:-ctr}" -a "$NODEKIT_CONTAINERD_SOCK" -n k8s.io)
elif [[ -n ${HOLLOWNODES_BIN:-} ]]; then
  NAME=hollownodes; cp "$HOLLOWNODES_BIN" "$DIR/hollownodes"
else
  NAME=hollownodes; CGO_ENABLED=0 go build -tags grpcnotrace -o "$DIR/hollownodes" ./examples/hollownodes
fi
if [[ -n ${HOLLOWNODES_BIN:-} && $MODE == hollow ]]; then log "hollownodes: $HOLLOWNODES_BIN"
else log "built at $(git rev-parse --short HEAD) with $(git status --porcelain -- '*.go' | grep -c . || true) uncommitted .go file(s)"; fi
bash "$HACK/apiserver-up.sh" 8>&- >/dev/null 2>>"$DIR/setup.log" || { tail -20 "$DIR/setup.log" >&2; die "hack/apiserver-up.sh failed"; }
# shellcheck disable=SC1091
. "$APIDIR/env"
NODE=$NODEKIT_NODE_NAME   # kubelet mode: the node kubeconfig's identity

# ---------------------------------------------------------------- API objects, clean-up
# drop_ns NS: its pods deleted at once (one DeleteCollection, grace 0), then the namespace,
# finalized here: without a kube-controller-manager nothing else would.
drop_ns() {
  local i
  for i in $(seq 5); do
    k delete --raw "/api/v1/namespaces/$1/pods?gracePeriodSeconds=0" >/dev/null 2>&1 || true
    [[ $(k get --raw "/api/v1/namespaces/$1/pods?limit=1" 2>/dev/null | jq '.items | length') == 0 ]] && break
  done
  k delete ns "$1" --wait=false --ignore-not-found >/dev/null 2>&1 || true
  k get ns "$1" -o json 2>/dev/null | jq '.spec.finalizers = []' |
    k replace --raw "/api/v1/namespaces/$1/finalize" -f - >/dev/null 2>&1 || true
}
# running_leftovers: running containerd tasks of pods whose sandboxes carry $NODE's label.
running_leftovers() {
  local sb uid ids=()
  for sb in $("${CTR[@]}" containers ls -q "labels.\"nodekit.dev/node\"==$NODE" 2>/dev/null); do
    ids+=("$sb")
    uid=$("${CTR[@]}" containers info "$sb" 2>/dev/null | jq -r '.Labels["io.kubernetes.pod.uid"] // empty')
    # shellcheck disable=SC2207
    [[ -z $uid ]] || ids+=($("${CTR[@]}" containers ls -q "labels.\"io.kubernetes.pod.uid\"==$uid" 2>/dev/null))
  done
  ((${#ids[@]})) || return 0
  printf '%s\n' "${ids[@]}" | sort -u | grep -Fxf <("${CTR[@]}" tasks ls 2>/dev/null | awk '$3 == "RUNNING" {print $1}') || true
}
delete_stale() { # an earlier run's namespaces and hollow Nodes; kubelet mode: $NODE's pods, Node, Lease
  local ns p
  for ns in $(k get ns -l "$LABEL" -o name 2>/dev/null); do drop_ns "${ns#namespace/}"; done
  k delete nodes -l "$LABEL=hollow" --ignore-not-found >/dev/null
  if [[ $MODE == kubelet ]]; then
    for p in $(k get pods -A --field-selector "spec.nodeName=$NODE" -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{" "}{end}'); do
      k -n "${p%%/*}" delete pod "${p#*/}" --grace-period=0 --force --ignore-not-found >/dev/null 2>&1 || true
    done
    k delete node "$NODE" --ignore-not-found >/dev/null; k -n kube-node-lease delete lease "$NODE" --ignore-not-found >/dev/null
  fi
}
DRAINED=0
drain_agent() { # kubelet mode: delete the pods; true once the API and containerd have none left
  local deadline=$((SECONDS + ${1:-120}))
  k delete pods -n "$NS" --all --wait=false >/dev/null 2>&1 || true
  until [[ $(k get --raw "/api/v1/namespaces/$NS/pods?limit=1" 2>/dev/null | jq '.items | length') == 0 &&
           -z $(running_leftovers) ]]; do
    ((SECONDS < deadline)) && ours "$PID" || return 1
    sleep 0.5
  done
  DRAINED=1
}
cleanup() {
  local rc=$? left
  set +e; trap - EXIT
  if [[ $MODE == hollow ]]; then
    if [[ -n $PID ]]; then stop "$PID"; fi   # deletes its Nodes
    k delete nodes -l "$LABEL=hollow" --ignore-not-found >/dev/null 2>&1
  else
    if ((!DRAINED)) && ours "$PID"; then drain_agent 60 || { log "cleanup: pods still there after 60s"; ((rc)) || rc=1; }; fi
    if [[ -n $PID ]]; then stop "$PID"; fi
    left=$(running_leftovers)
    [[ -z $left ]] || log "cleanup: killing containers left running: ${left//$'\n'/ }"
    for id in $left; do "${CTR[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1; done
  fi
  drop_ns "$NS"; delete_stale 2>/dev/null
  rm -rf --one-file-system "$DIR/lists" "$DIR/root" "$DIR/logs" "$DIR/kubelet" "$DIR/hollownodes"
  ((rc == 0)) || log "logs in $DIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
delete_stale

# ---------------------------------------------------------------- nodes
if [[ $MODE == hollow ]]; then
  start hollownodes "$DIR/hollownodes" --nodes "$NODES" --kubeconfig "$NODEKIT_KUBECONFIG" \
    --name-prefix burst-hollow- --node-labels "$LABEL=hollow"
  NODE_NAMES=$(seq -f 'burst-hollow-%g' 0 $((NODES - 1)))
  ready_count() { k get nodes -l "$LABEL=hollow" -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True || true; }
  POD_SPEC=$'    terminationGracePeriodSeconds: 0\n    containers: [{name: c, image: registry.k8s.io/pause:3.10}]\n'
else
  port() { local p; while p=$((24000 + RANDOM % 8000)); ss -Hltn "sport = :$p" | grep -q .; do :; done; echo "$p"; }
  CGROUPV1=(); [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] || CGROUPV1=(--fail-cgroupv1=false) # refused by default
  HEALTHZ_PORT=$(port); start agent "$DIR/kubelet" "${CGROUPV1[@]}" --runtime remote --container-runtime-endpoint "$NODEKIT_CRI_ENDPOINT" \
    --kubeconfig "$NODEKIT_NODE_KUBECONFIG" --hostname-override "$NODE" --node-ip 127.0.0.1 \
    --node-labels "$LABEL=kubelet" \
    --pod-manifest-path "$DIR/manifests" --file-check-frequency 1s --sync-frequency 3s \
    --root-dir "$DIR/root" --pod-logs-dir "$DIR/logs" --containers-log-dir "$DIR/containers" --cgroups-per-qos=false \
    --address 127.0.0.1 --port "$(port)" --read-only-port "$(port)" --healthz-port "$HEALTHZ_PORT" \
    --client-ca-file "$NODEKIT_CLIENT_CA" --node-status-update-frequency 2s --node-lease-duration-seconds 8
  NODES=1 NODE_NAMES=$NODE
  ready_count() { k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -c True || true; }
  POD_SPEC=$'    hostNetwork: true\n    terminationGracePeriodSeconds: 5\n'
  POD_SPEC+=$'    containers: [{name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [sleep]}]\n'
fi
log "$NAME pid $PID, log $DIR/$NAME.log; waiting for $NODES node(s) Ready"
deadline=$((SECONDS + 180))
until [[ $(ready_count) == "$NODES" ]]; do
  alive_or_die; ((SECONDS < deadline)) || die "only $(ready_count) of $NODES nodes Ready after 180s"; sleep 1
done
log "$NODES node(s) Ready"

# ---------------------------------------------------------------- the burst
k create ns "$NS" >/dev/null && k label ns "$NS" "$LABEL=$MODE" >/dev/null
TOTAL=$((NODES * PODS)) i=0
for node in $NODE_NAMES; do
  { printf 'apiVersion: v1\nkind: List\nitems:\n'
    for ((j = 0; j < PODS; j++)); do
      printf -- '- apiVersion: v1\n  kind: Pod\n  metadata: {name: p%d-%d, namespace: %s, labels: {%s: "%s"}}\n  spec:\n    nodeName: %s\n%s' \
        "$i" "$j" "$NS" "$LABEL" "$MODE" "$node" "$POD_SPEC"
    done; } > "$DIR/lists/$node.yaml"
  i=$((i + 1))
done
log "creating $TOTAL pods in namespace $NS: $NODES List(s) of $PODS, $([[ $MODE == hollow ]] && echo "$PARALLEL kubectl at a time" || echo "one kubectl create")"
T_CREATE=$(now)
printf '%s\n' "$DIR"/lists/*.yaml | xargs -P"$PARALLEL" -n1 "$KUBECTL" --kubeconfig "$NODEKIT_KUBECONFIG" create -f \
  > "$DIR/create.log" 2>&1 || { grep -v ' created$' "$DIR/create.log" | tail -20 >&2; die "kubectl create failed"; }
CREATED=$(secs "$T_CREATE")
log "created in ${CREATED}s; waiting until all are Running (deadline ${DEADLINE}s from the first create)"

not_running() { k get pods -n "$NS" --field-selector=status.phase!=Running --no-headers "$@" 2>/dev/null; }
first_not_running() { k get --raw "/api/v1/namespaces/$NS/pods?fieldSelector=status.phase%21%3DRunning&limit=1" | jq '.items | length'; }
last=$SECONDS
while :; do
  alive_or_die
  [[ $(first_not_running 2>/dev/null) == 0 ]] && break
  if (($(secs "$T_CREATE" | cut -d. -f1) >= DEADLINE)); then
    out=$(not_running -o custom-columns=N:.spec.nodeName,P:.status.phase) || true
    n=$(grep -c . <<<"$out" || true) stuck=$(awk '{print $1}' <<<"$out" | sort -u | grep -c . || true)
    ready=" $(k get nodes -l "$LABEL" -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}' 2>/dev/null || true)"
    log "NOT all Running after ${DEADLINE}s: $n of $TOTAL pods on $stuck of $NODES nodes; per node (pods phase, node Ready):"
    sort <<<"$out" | uniq -c | sort -V -k2 | while read -r c node phase; do
      r=${ready#*" $node="}; echo "    $node: $c $phase, Ready=${r%% *}"; done >&2
    if [[ $MODE == hollow && ${QUIT_ON_TIMEOUT:-0} == 1 ]]; then
      log "SIGQUIT to hollownodes: goroutines in $DIR/hollownodes.log"; kill -QUIT "$PID"; sleep 3
    fi
    log_summary; die "$((TOTAL - n))/$TOTAL Running after ${DEADLINE}s"
  fi
  if ((SECONDS - last >= 15)); then
    last=$SECONDS
    if out=$(not_running); then log "$((TOTAL - $(grep -c . <<<"$out" || true)))/$TOTAL Running"; fi
  fi
  sleep 1
done
ALL=$(secs "$T_CREATE") LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
n=$(k get pods -n "$NS" --no-headers 2>/dev/null | grep -c . || true)
[[ $n == "$TOTAL" ]] || die "all pods Running, but $n of $TOTAL in $NS"
extra=
if [[ $MODE == hollow ]]; then
  read -r ut st < <(sed 's/^.*) //' "/proc/$PID/stat" | awk '{print $12, $13}')
  extra=", hollownodes RSS $(awk '/^VmRSS/ {printf "%.0f MB", $2/1024}' "/proc/$PID/status") (peak $(awk '/^VmHWM/ {printf "%.0f MB", $2/1024}' "/proc/$PID/status")), CPU $(awk -v t=$((ut + st)) -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t / hz}')s"
else
  T_DEL=$(now); drain_agent 120 || die "the $TOTAL pods not gone from the API and containerd 120s after kubectl delete"
  extra=", deleted and gone from containerd in $(secs "$T_DEL")s"
fi
log_summary
echo "BURST $MODE: $NODES node(s) x $PODS pods = $TOTAL pods, created in ${CREATED}s, all Running ${ALL}s after the first create$extra; load average $LOAD"
