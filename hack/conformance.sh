#!/usr/bin/env bash
# conformance.sh - Kubernetes' own end-to-end specs that judge a node ([NodeConformance]) against the reference
# agent, joined to a real control plane on 127.0.0.1: etcd + kube-apiserver (hack/apiserver-up.sh),
# kube-controller-manager, kube-scheduler, containerd (hack/containerd-up.sh) and examples/kubelet. No outside
# registry: the e2e images are stand-ins built locally (hack/tools/mkimage), imported into containerd and served
# by a registry on 127.0.0.1 (hack/tools/registry) that containerd takes for their registry host.
#
# Usage: hack/conformance.sh [subset|all|up|run|down]
#   subset  up, the specs listed in hack/conformance/subset.txt (seconds each) in STREAMS e2e processes, down.
#           Fails unless every listed spec ran and passed. Part of hack/test.sh.
#   all     up, every [NodeConformance] spec (Serial, Disruptive, Flaky and [Feature:] skipped), each in its own
#           e2e process bounded by PER_SPEC_MINUTES, dealt over STREAMS streams, down (about 45 min for 167 specs).
#           Fails if a spec fails that hack/conformance/misses.tsv does not list (what this machine cannot pass,
#           the kubelet included, with the reason), and names listed specs that passed. SPECS=FILE runs only the
#           full spec texts listed in FILE (e.g. the failures of an earlier run).
#   up      the cluster alone, Ready; then `run` and `down` by hand.
#   run     with the cluster up: the specs FOCUS (a regex on the full spec text) selects, in one process; or, with
#           SPECS=FILE, each full spec text listed in FILE in its own process, as `all` runs them (e.g.
#           SPECS=hack/conformance/v137-targets.txt: the node's [Conformance] specs new since v1.32).
#   down    stop everything started here and remove its state.
# Reports: $REPORT_DIR (default $DIR/report): summary.tsv (state, seconds, spec, first failure line) and a log per
# process; the agent's log is $DIR/agent.log.
#
# The e2e suite is hack/conformance/suite_test.go: e2e.test cut down to test/e2e/common, where every
# [NodeConformance] spec lives, and test/e2e/node, built from the Go module proxy at Kubernetes v$E2E_VERSION with
# the kube-controller-manager, kube-scheduler and agnhost of that release (hack/lib-k8s-build.sh; cold at v1.37.2:
# about 25 min on 2 cores), cached in ${NODEKIT_BIN_CACHE:-$HOME/.cache/nodekit-bins}/k8s-v$E2E_VERSION. The suite's
# imports follow test/e2e/e2e_test.go of v1.37; the stand-in images take their names and tags from that release's
# test/utils/image/manifest.go, as e2e.test asks for them.
#
# Env (all optional): NODEKIT_CONFORMANCE_DIR (default /tmp/nodekit-conformance), E2E_VERSION (1.37.2),
#   STREAMS (subset 2, all 3), PER_SPEC_MINUTES (5), SLOW_SPEC_MINUTES (40, for [Slow] specs: "cap back-off at
#   MaxContainerBackOff" waits about 30 min; and "issue 500 podspec updates"), FOCUS, SPECS, REPORT_DIR; NODEKIT_K8S_BIN_DIR and NODEKIT_K8S_VERSION
#   (default: E2E_VERSION) as apiserver-up.sh.
# Ports (127.0.0.1): apiserver 17443, etcd 27790/27800, controller-manager 17257, scheduler 17259,
# agent 17250 (API) and 17248 (healthz), image registry 17500, each plus NODEKIT_CONFORMANCE_PORT_OFFSET (0), so
# that two runs with different directories can share the machine. Pod cgroups under /<basename of the directory>.
# Needs root.
set -euo pipefail

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HACK")
DIR=${NODEKIT_CONFORMANCE_DIR:-/tmp/nodekit-conformance}
E2E_VERSION=${E2E_VERSION:-1.37.2}
CACHE=${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/k8s-v$E2E_VERSION
BIN=$DIR/bin
IMAGES=$DIR/images
REPORT_DIR=${REPORT_DIR:-$DIR/report}
NODE_NAME=conformance-node
REGISTRY=nodekit.local
CGROUP_ROOT=/$(basename "$DIR")
P=${NODEKIT_CONFORMANCE_PORT_OFFSET:-0}
KCM_PORT=$((17257 + P)) SCHED_PORT=$((17259 + P)) AGENT_PORT=$((17250 + P)) AGENT_HEALTHZ_PORT=$((17248 + P))
REGISTRY_PORT=$((17500 + P))
PER_SPEC_MINUTES=${PER_SPEC_MINUTES:-5} SLOW_SPEC_MINUTES=${SLOW_SPEC_MINUTES:-40}
SKIP='Serial|Disruptive|Flaky|\[Feature:'
export PATH=/usr/local/go/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin
export NODEKIT_CONTAINERD_DIR=$DIR/containerd NODEKIT_APISERVER_DIR=$DIR/apiserver
export NODEKIT_APISERVER_PORT=$((17443 + P)) NODEKIT_ETCD_PORT=$((27790 + P)) NODEKIT_ETCD_PEER_PORT=$((27800 + P))
export NODEKIT_NODE_NAME=$NODE_NAME NODEKIT_K8S_VERSION=${NODEKIT_K8S_VERSION:-$E2E_VERSION}
export NODEKIT_APISERVER_ADMISSION=NodeRestriction,ServiceAccount
export KUBE_TEST_REPO_LIST=$DIR/repo-list.yaml

log() { echo "[conformance +${SECONDS}s] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=lib-k8s-build.sh
. "$HACK/lib-k8s-build.sh"

binaries() {
  mkdir -p "$BIN"
  local want=(kube-controller-manager kube-scheduler) b missing=()
  command -v kubectl >/dev/null || want+=(kubectl)
  for b in "${want[@]}"; do
    "$CACHE/$b" --version 2>/dev/null | grep -q "v$E2E_VERSION" || missing+=("k8s.io/kubernetes/cmd/$b")
  done
  if ((${#missing[@]})); then
    log "building ${missing[*]} v$E2E_VERSION from the Go module proxy"
    k8s_build "$E2E_VERSION" "$CACHE" "${missing[@]}" || die "building ${missing[*]} failed"
  fi
  KUBECTL=$(command -v kubectl || echo "$CACHE/kubectl")
  # agnhost runs in an image without a libc: static.
  if [[ ! -x $CACHE/agnhost ]]; then
    log "building agnhost v$E2E_VERSION (static) from the Go module proxy"
    CGO_ENABLED=0 k8s_build "$E2E_VERSION" "$CACHE" k8s.io/kubernetes/test/images/agnhost || die "building agnhost failed"
  fi
  # The suite is rebuilt when its source changes (its hash is in the name).
  local sum; sum=$(sha256sum "$HACK/conformance/suite_test.go" | cut -c1-12)
  E2E=$CACHE/e2e-node-$sum.test
  if [[ ! -x $E2E ]]; then
    log "building the e2e suite (hack/conformance/suite_test.go) v$E2E_VERSION from the Go module proxy"
    k8s_build_test "$E2E_VERSION" "$CACHE" "e2e-node-$sum.test" "$HACK/conformance" nodekit_conformance_suite ||
      die "building the e2e suite failed"
  fi
  log "building examples/kubelet and the image tools"
  (cd "$ROOT" && CGO_ENABLED=0 go build -tags grpcnotrace -o "$BIN/nodekit-kubelet" ./examples/kubelet) || die "go build ./examples/kubelet"
  (cd "$HACK/tools" && CGO_ENABLED=0 go build -trimpath -o "$BIN/" ./mkimage ./nnp ./pause ./registry) || die "go build hack/tools"
}

# debian_binary PACKAGE PATH: a static binary out of a Debian package, cached in $BIN.
debian_binary() {
  local pkg=$1 path=$2 d
  [[ -x $BIN/$pkg ]] && return 0
  d=$(mktemp -d "$DIR/.deb.XXXXXX")
  (cd "$d" && apt-get download -qq "$pkg" >/dev/null 2>&1 && dpkg-deb -x "$pkg"_*.deb root) ||
    { rm -rf "$d"; die "cannot fetch $pkg (apt-get download $pkg)"; }
  cp "$d/root$path" "$BIN/$pkg"; rm -rf "$d"
}

# e2e_tag CONFIG: the tag e2e.test v$E2E_VERSION gives its image CONFIG (BusyBox, Agnhost, ...), read from that
# release's test/utils/image/manifest.go (configs[CONFIG] = Config{registry, "name", "tag"}); empty when it has none.
e2e_tag() {
  if [[ -z ${MANIFEST:-} ]]; then
    local d; d=$(cd / && GOFLAGS='' go mod download -json "k8s.io/kubernetes@v$E2E_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
    MANIFEST=$d/test/utils/image/manifest.go
    [[ -f $MANIFEST ]] || die "no test/utils/image/manifest.go in k8s.io/kubernetes@v$E2E_VERSION ($d)"
  fi
  awk -v k="configs[$1] =" -F'"' '{sub(/^[[:space:]]+/, "", $1)} index($1, k) == 1 {print $4; exit}' "$MANIFEST"
}

# images writes the stand-ins for the e2e images the specs use, as KUBE_TEST_REPO_LIST names them and with the
# tags of e2e.test v$E2E_VERSION: busybox (Debian's busybox-static with every applet linked, /bin/sh bash-static:
# busybox 1.35's ash drops environment variables whose names are not identifiers, which the ConfigMap and Secret
# env specs read back), agnhost and the previous agnhost (the real binary over the same base), nonroot (user 1234),
# glibc-dns-testing (busybox: the hostnameOverride specs run `hostname` and `hostname -f`),
# nonewprivs (a setuid-root program printing its effective uid), httpd and nginx (busybox httpd on :80), kitten and
# nautilus (agnhost with the data.json and picture of the real images, and the /etc/os-release of their Alpine base,
# which the image volume specs read through an image volume) and pause (hack/tools/pause), which the specs also run
# as a container.
images() {
  mkdir -p "$IMAGES"
  debian_binary busybox-static /bin/busybox
  debian_binary bash-static /bin/bash-static
  local base=(-file "$BIN/busybox-static:/bin/busybox:0755" -file "$BIN/bash-static:/bin/bash:0755" -symlink /bin/sh=bash)
  local a
  for a in $("$BIN/busybox-static" --list); do
    case $a in busybox | sh | bash) ;; *) base+=(-symlink "/bin/$a=busybox") ;; esac
  done
  base+=(-symlink /usr/bin=/bin -symlink /sbin=/bin -symlink /usr/sbin=/bin -dir /root)
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$DIR/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$DIR/group"
  base+=(-file "$DIR/passwd:/etc/passwd:0644" -file "$DIR/group:/etc/group:0644")
  echo '<html><body>It works!</body></html>' > "$DIR/index.html"
  local E=$REGISTRY/e2e-test-images web=(-file "$DIR/index.html:/var/www/index.html:0644" -entrypoint "/bin/httpd -f -p 80 -h /var/www")
  mk() { "$BIN/mkimage" -o "$IMAGES/$1.tar" -ref "$2" "${base[@]}" "${@:3}" >/dev/null || die "mkimage $2"; }
  local agnhost=(-file "$CACHE/agnhost:/agnhost:0755" -symlink /agnhost-2=agnhost -dir /uploads -entrypoint /agnhost)
  printf 'NAME="Alpine Linux"\nID=alpine\nPRETTY_NAME="Alpine Linux (nodekit stand-in)"\n' > "$DIR/os-release"
  rm -f "$IMAGES"/*.tar
  # CONFIG FILE-NAME IMAGE-NAME MKIMAGE-ARGS...: the image, if e2e.test v$E2E_VERSION has CONFIG.
  img() {
    local tag; tag=$(e2e_tag "$1"); [[ -n $tag ]] || return 0
    mk "$2-$tag" "$E/$3:$tag" "${@:4}"
  }
  img BusyBox busybox busybox -cmd sh
  img Agnhost agnhost agnhost "${agnhost[@]}" -cmd pause
  img AgnhostPrev agnhost agnhost "${agnhost[@]}" -cmd pause
  img NonRoot nonroot nonroot -user 1234 -cmd sh
  img GlibcDnsTesting glibc-dns-testing glibc-dns-testing -cmd sh
  img Nonewprivs nonewprivs nonewprivs -file "$BIN/nnp:/usr/local/bin/nnp:4755" -cmd nnp
  img Httpd httpd httpd "${web[@]}"
  img HttpdNew httpd httpd "${web[@]}"
  img Nginx nginx nginx "${web[@]}"
  img NginxNew nginx nginx "${web[@]}"
  local p
  for p in kitten nautilus; do
    printf '{\n  "image": "%s.jpg"\n}\n' "$p" > "$DIR/$p.json"; printf 'not a picture: %s\n' "$p" > "$DIR/$p.jpg"
    img "${p^}" "$p" "$p" "${agnhost[@]}" -file "$DIR/os-release:/etc/os-release:0644" \
      -file "$DIR/$p.json:/data.json:0644" -file "$DIR/$p.jpg:/$p.jpg:0644" -cmd test-webserver
  done
  local pause; pause=$(e2e_tag Pause); [[ -n $pause ]] || die "no Pause image in e2e.test v$E2E_VERSION"
  "$BIN/mkimage" -o "$IMAGES/pause.tar" -ref "$REGISTRY/pause:$pause" -file "$BIN/pause:/pause:0755" -entrypoint /pause \
    >/dev/null || die "mkimage pause"
  printf '%s\n' "promoterE2eRegistry: $E" "gcRegistry: $REGISTRY" "gcEtcdRegistry: $REGISTRY" \
    "sigStorageRegistry: $REGISTRY/sig-storage" "buildImageRegistry: $REGISTRY/build-image" > "$KUBE_TEST_REPO_LIST"
}

# start NAME CMD...: a detached daemon whose pid file holds its own pid.
start() {
  local name=$1; shift
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$DIR/$name.pid" "$@" > "$DIR/$name.log" 2>&1 < /dev/null &
  local i; for i in $(seq 1 50); do [[ -s $DIR/$name.pid ]] && return 0; sleep 0.1; done
  die "$name did not start"
}
# stop NAME: TERM, then KILL after 10 s, only the pid its file names and only if it still runs that binary.
stop() {
  local f=$DIR/$1.pid pid i; pid=$(cat "$f" 2>/dev/null) || return 0
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "$DIR"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
kc() { "$KUBECTL" --kubeconfig "$KAPI/kubeconfig" "$@"; }
# wait_for SECONDS WHAT CMD...: until CMD succeeds, or die saying WHAT did not happen.
wait_for() {
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { tail -20 "$DIR/agent.log" >&2; die "$what (agent log: $DIR/agent.log)"; }
    sleep 1
  done
}
ready() { [[ $(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]; }

up() {
  mkdir -p "$DIR"
  binaries
  images
  log "containerd"
  bash "$HACK/containerd-up.sh" >/dev/null
  # shellcheck disable=SC1091  # written by containerd-up.sh; NODEKIT_CTR is the ctr of that containerd
  local f ctr; ctr=$(. "$NODEKIT_CONTAINERD_DIR/env" && echo "$NODEKIT_CTR")
  for f in "$IMAGES"/*.tar; do "$ctr" -a "$DIR/containerd/containerd.sock" -n k8s.io images import "$f" >/dev/null ||
    die "import $f"; done
  # The same images from a registry (hack/tools/registry), which containerd is told is $REGISTRY: a pull policy
  # of Always (the image volume spec) and the specs that pull on purpose need one.
  log "registry for $REGISTRY on 127.0.0.1:$REGISTRY_PORT"
  rm -f "$DIR/registry.ready"
  start registry "$BIN/registry" -addr "127.0.0.1:$REGISTRY_PORT" -ready "$DIR/registry.ready" "$IMAGES"/*.tar
  mkdir -p "$DIR/containerd/certs.d/$REGISTRY"
  printf 'server = "http://127.0.0.1:%s"\n\n[host."http://127.0.0.1:%s"]\n  capabilities = ["pull", "resolve"]\n' \
    "$REGISTRY_PORT" "$REGISTRY_PORT" > "$DIR/containerd/certs.d/$REGISTRY/hosts.toml"
  log "etcd + kube-apiserver"
  bash "$HACK/apiserver-up.sh" --fresh >/dev/null
  KAPI=$NODEKIT_APISERVER_DIR
  # Binaries named by their path under $DIR, so stop never signals another process.
  cp "$CACHE/kube-controller-manager" "$CACHE/kube-scheduler" "$BIN/"
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KAPI/kubeconfig" \
    --authentication-kubeconfig="$KAPI/kubeconfig" --authorization-kubeconfig="$KAPI/kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false --controllers='*' \
    --service-account-private-key-file="$KAPI/sa.key" --root-ca-file="$KAPI/certs/apiserver.crt" \
    --use-service-account-credentials=true --cert-dir="$DIR/kcm-certs"
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KAPI/kubeconfig" \
    --authentication-kubeconfig="$KAPI/kubeconfig" --authorization-kubeconfig="$KAPI/kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false --cert-dir="$DIR/scheduler-certs"
  wait_for 120 "registry not ready in 120 s ($DIR/registry.log)" test -s "$DIR/registry.ready"
  agent
}

agent() {
  local h; for h in /sys/fs/cgroup/ /sys/fs/cgroup/*/; do [[ -d $h/cgroup.procs || -f $h/cgroup.procs ]] &&
    mkdir -p "$h${CGROUP_ROOT#/}" 2>/dev/null || true; done
  mkdir -p "$DIR/kubelet" "$DIR/pod-logs"
  printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: %s\n' "$DIR/pod-logs" \
    > "$DIR/kubelet-config.yaml"
  # The kubelet (and the agent) refuse a cgroup v1 host unless told otherwise.
  [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] || echo 'failCgroupV1: false' >> "$DIR/kubelet-config.yaml"
  # The node's filesystem is shared with whatever else runs on the machine, which the specs do not measure: with
  # the kubelet's defaults (evict below 10-15% available, image GC above 85% used) a build elsewhere puts the node
  # under DiskPressure mid-run, evicting the specs' pods and removing their images. Only a nearly full disk counts.
  printf '%s\n' 'evictionHard: {memory.available: 100Mi, nodefs.available: 2Gi, imagefs.available: 2Gi, nodefs.inodesFree: 1%}' \
    'imageGCHighThresholdPercent: 99' 'imageGCLowThresholdPercent: 98' >> "$DIR/kubelet-config.yaml"
  log "examples/kubelet as $NODE_NAME"
  start agent "$BIN/nodekit-kubelet" --config="$DIR/kubelet-config.yaml" --kubeconfig="$KAPI/kubeconfig-node" \
    --container-runtime-endpoint="unix://$DIR/containerd/containerd.sock" --cgroup-driver=cgroupfs \
    --cgroup-root="$CGROUP_ROOT" --root-dir="$DIR/kubelet" --containers-log-dir="$DIR/containers-logs" --client-ca-file="$KAPI/certs/client-ca.crt" \
    --anonymous-auth=false --authentication-token-webhook --authorization-mode=Webhook --read-only-port=0 \
    --address=127.0.0.1 --port="$AGENT_PORT" --healthz-bind-address=127.0.0.1 --healthz-port="$AGENT_HEALTHZ_PORT" \
    --hostname-override="$NODE_NAME" --node-ip=127.0.0.1
  wait_for 120 "node $NODE_NAME not Ready in 120 s" ready
  wait_for 60 "no default service account in 60 s (kube-controller-manager: $DIR/kube-controller-manager.log)" \
    kc get serviceaccount default -n default
  log "up: KUBECONFIG=$KAPI/kubeconfig"
}

down() {
  stop agent; stop kube-scheduler; stop kube-controller-manager; stop registry
  bash "$HACK/apiserver-down.sh" --purge >&2 || true
  bash "$HACK/containerd-down.sh" --purge >&2 || true
  # the agent's volume mounts (tmpfs for secrets), deepest first
  awk -v p="$DIR/kubelet/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
  rm -rf "$DIR/kubelet" "$DIR/pod-logs"
  local h; for h in /sys/fs/cgroup/ /sys/fs/cgroup/*/; do
    [[ -d $h${CGROUP_ROOT#/} ]] && find "$h${CGROUP_ROOT#/}" -depth -type d -exec rmdir {} + 2>/dev/null; done
  return 0
}

# e2e LOG JSON MINUTES FOCUS...: one e2e process; each FOCUS is a regex (ginkgo ORs them). The suite's own
# timeout ends it; a hung one is killed 2 minutes later (its report is then missing, which fails the run).
e2e() {
  local logf=$1 json=$2 timeout=$3m f args=(); shift 3
  for f in "$@"; do args+=(--ginkgo.focus="$f"); done
  timeout -k 10 "$((${timeout%m} + 2))m" "$E2E" --kubeconfig="$KAPI/kubeconfig" --provider=skeleton --ginkgo.skip="$SKIP" --ginkgo.timeout="$timeout" \
    --ginkgo.no-color --ginkgo.v --ginkgo.json-report="$json" "${args[@]}" > "$logf" 2>&1 < /dev/null || true
}
# exact TEXT: a focus regex matching that full spec text only (ginkgo prefixes the suite's name).
exact() { printf '%s$' "$(printf '%s' "$1" | sed 's/[][\\.*^$(){}?+|/]/\\&/g')"; }

subset() {
  local list=$HACK/conformance/subset.txt streams=${STREAMS:-2} i pids=() n
  n=$(grep -cv '^#' "$list")
  log "subset: $n specs in $streams streams -> $REPORT_DIR"
  for ((i = 0; i < streams; i++)); do
    mapfile -t specs < <(grep -v '^#' "$list" | awk -v k="$i" -v n="$streams" 'NR%n==k')
    local focus=() s; for s in "${specs[@]}"; do focus+=("$(exact "$s")"); done
    e2e "$REPORT_DIR/s$i.log" "$REPORT_DIR/s$i.json" 15 "${focus[@]}" &
    pids+=($!)
  done
  wait "${pids[@]}"
  grep -v '^#' "$list" > "$REPORT_DIR/want.txt"
  "$BIN/e2ereport" summary -misses /dev/null -ran "$REPORT_DIR/want.txt" "$REPORT_DIR"/s*.json > "$REPORT_DIR/summary.tsv" ||
    { grep -v '^passed' "$REPORT_DIR/summary.tsv" >&2; die "subset failed; logs in $REPORT_DIR, agent log $DIR/agent.log"; }
  tail -1 "$REPORT_DIR/summary.tsv" >&2
}

all() {
  local streams=${STREAMS:-3} i pids=()
  if [[ -n ${SPECS:-} ]]; then
    grep -v '^#' "$SPECS" > "$REPORT_DIR/specs.txt" || die "SPECS=$SPECS: no specs"
  else
    "$E2E" --kubeconfig="$KAPI/kubeconfig" --provider=skeleton --ginkgo.focus='\[NodeConformance\]' \
      --ginkgo.skip="$SKIP" --ginkgo.dry-run --ginkgo.json-report="$REPORT_DIR/dry-run.json" > "$REPORT_DIR/dry-run.log" 2>&1 ||
      die "dry run failed: $REPORT_DIR/dry-run.log"
    "$BIN/e2ereport" list "$REPORT_DIR/dry-run.json" > "$REPORT_DIR/specs.txt"
  fi
  log "all: $(wc -l < "$REPORT_DIR/specs.txt") specs in $streams streams, $PER_SPEC_MINUTES min each -> $REPORT_DIR"
  for ((i = 0; i < streams; i++)); do
    (
      mkdir -p "$REPORT_DIR/s$i"
      n=0
      awk -v k="$i" -v n="$streams" 'NR%n==k' "$REPORT_DIR/specs.txt" | while IFS= read -r spec; do
        n=$((n + 1)); t0=$SECONDS; minutes=$PER_SPEC_MINUTES
        # [Slow] specs, and the pod generation spec that makes 499 updates (about 4 min here, paced by the client)
        [[ $spec == *"[Slow]"* || $spec == *"issue 500 podspec updates"* ]] && minutes=$SLOW_SPEC_MINUTES
        e2e "$REPORT_DIR/s$i/$n.log" "$REPORT_DIR/s$i/$n.json" "$minutes" "$(exact "$spec")"
        echo "$((SECONDS - t0))s $spec" >> "$REPORT_DIR/s$i.progress"
      done
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  local rc=0
  "$BIN/e2ereport" summary -misses "$HACK/conformance/misses.tsv" -ran "$REPORT_DIR/specs.txt" "$REPORT_DIR"/s*/*.json > "$REPORT_DIR/summary.tsv" || rc=1
  grep '^#' "$REPORT_DIR/summary.tsv" >&2
  return $rc
}

cmd=${1:-subset}
case $cmd in
  up) up ;;
  down) down ;;
  run | subset | all)
    if [[ $cmd != run ]]; then trap 'cp "$DIR/agent.log" "$REPORT_DIR/" 2>/dev/null; down' EXIT; up; fi
    KAPI=$NODEKIT_APISERVER_DIR
    [[ -n ${E2E:-} ]] || E2E=$(ls -t "$CACHE"/e2e-node-*.test 2>/dev/null | head -1)
    [[ -x $E2E ]] || die "no e2e suite in $CACHE: run $0 up first"
    (cd "$HACK/tools" && go build -o "$BIN/e2ereport" ./e2ereport) || die "go build hack/tools/e2ereport"
    rm -rf "$REPORT_DIR"; mkdir -p "$REPORT_DIR"
    case $cmd in
      run) if [[ -n ${SPECS:-} ]]; then all; exit; fi
        [[ -n ${FOCUS:-} ]] || die "run needs FOCUS or SPECS"
        e2e "$REPORT_DIR/run.log" "$REPORT_DIR/run.json" 30 "$FOCUS"
        "$BIN/e2ereport" summary "$REPORT_DIR/run.json" | tee "$REPORT_DIR/summary.tsv" ;;
      *) "$cmd" ;;
    esac ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
