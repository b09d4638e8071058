#!/usr/bin/env bash
# containerd-up.sh - start a private containerd (CRI v1) for nodekit's integration tests.
#
# Usage:  hack/containerd-up.sh [--restart-only]
#   (no flag)       install missing packages, build or reuse containerd and runc, write
#                   config, build hack/tools, build the test images, start containerd
#                   unless it already runs with the same config, wait for CRI, import
#                   the images, write $DIR/env.
#   --restart-only  only start containerd again if it is not running (e.g. after a test
#                   killed it) and wait for CRI; builds and imports nothing.
#
# Env:
#   NODEKIT_CONTAINERD_DIR      state/config dir (default /tmp/nodekit-containerd)
#   NODEKIT_CONTAINERD_TIMEOUT  seconds to wait for CRI readiness (default 60)
#   NODEKIT_CONTAINERD          "built" (default): containerd and runc built from the Go
#                               module proxy by hack/lib-containerd-build.sh (pinned there:
#                               containerd 2.4.x, runc 1.5.x; cold build ~4 min, cached in
#                               ${NODEKIT_BIN_CACHE:-$HOME/.cache/nodekit-bins}/containerd-v*
#                               and runc-v*), config version 3.
#                               "debian": Debian's containerd 1.6 and runc 1.1 (apt), config
#                               version 2 - the old test bed, for checking both still work.
#   NODEKIT_BIN_CACHE           where built binaries are cached (see above)
#
# Everything lives under $DIR: config.toml, containerd.sock, containerd.pid,
# containerd.log, root/, state/, runc/, cni/, bin/ (mkimage, pause, testbin),
# images/ (pause.tar, testbin.tar, removable.tar), certs.d/ and env (export lines for tests):
#   NODEKIT_CRI_ENDPOINT NODEKIT_CONTAINERD_DIR NODEKIT_CONTAINERD_PIDFILE
#   NODEKIT_IMAGE_DIR NODEKIT_CTR NODEKIT_CONTAINERD_SOCK NODEKIT_CONTAINERD_LOG
#   NODEKIT_CONTAINERD_CERTS_D
#   NODEKIT_CONTAINERD_VERSION NODEKIT_RUNC_VERSION (as the binaries report them, no "v")
# certs.d/ is the CRI registry config_path (both config versions): a test that runs a
# registry drops certs.d/<host:port>/hosts.toml there (e.g. plain HTTP on 127.0.0.1);
# containerd reads it on every pull, so no restart.
# NODEKIT_CTR is the ctr matching the containerd that runs. The containerd binary's
# directory comes first on containerd's PATH (it finds containerd-shim-runc-v2 there;
# the config also names the shim by runtime_path), runc is named by the runtime's
# BinaryName option.
# Images (namespace k8s.io): nodekit.local/pause:1 (sandbox image),
# nodekit.local/testbin:1 (entrypoint /testbin, cmd serve, PORT=8080) and
# nodekit.local/removable:1 (same binary, label nodekit.removable=1, so a distinct
# image ID; tests remove it and re-import $NODEKIT_IMAGE_DIR/removable.tar).
# containerd 2 needs nothing enabled for image volumes (>= 2.1) or user namespaces
# (idmapped overlayfs mounts, kernel >= 5.19, runc >= 1.2); NRI is disabled (its
# socket is host-global, so two test containerds would collide on it).
#
# Progress goes to stderr; the last stdout line is NODEKIT_CRI_ENDPOINT=unix://$DIR/containerd.sock.
# Idempotent: packages, binary and tool builds and image archives are only redone when
# missing or stale; a running containerd with the same config (which names the binaries)
# is kept, a different one is restarted. Two machine-specific settings are explained in
# section 2 below. Stop with hack/containerd-down.sh [--purge]; nothing is ever killed
# by process name.
set -euo pipefail

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOLS=$HACK/tools
DIR=${NODEKIT_CONTAINERD_DIR:-/tmp/nodekit-containerd}
TIMEOUT=${NODEKIT_CONTAINERD_TIMEOUT:-60}
SOCK=$DIR/containerd.sock
PIDFILE=$DIR/containerd.pid
LOG=$DIR/containerd.log
CONFIG=$DIR/config.toml
BIN=$DIR/bin
IMAGES=$DIR/images
PAUSE_IMAGE=nodekit.local/pause:1
TESTBIN_IMAGE=nodekit.local/testbin:1
REMOVABLE_IMAGE=nodekit.local/removable:1
MODE=${NODEKIT_CONTAINERD:-built}
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
# shellcheck source=hack/lib-containerd-build.sh disable=SC1091  # checked on its own
. "$HACK/lib-containerd-build.sh"

RESTART_ONLY=0
for a in "$@"; do
  case $a in
    --restart-only) RESTART_ONLY=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 0 ;;
    *) echo "usage: $0 [--restart-only]" >&2; exit 2 ;;
  esac
done

log() { echo "[containerd-up +${SECONDS}s] $*" >&2; }
die() { echo "[containerd-up +${SECONDS}s] ERROR: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "must run as root"
case $MODE in built|debian) ;; *) die "NODEKIT_CONTAINERD must be built or debian: $MODE" ;; esac
case $DIR in /*) ;; *) die "NODEKIT_CONTAINERD_DIR must be absolute: $DIR" ;; esac
# Unix socket paths are limited to 107 bytes.
(( ${#SOCK} + 6 < 108 )) || die "NODEKIT_CONTAINERD_DIR too long for a unix socket path: $SOCK"

mkdir -p "$DIR"
# Serialise concurrent runs (fd 9 is closed for containerd itself, see start_containerd).
exec 9>"$DIR/.lock"
flock 9

# running: our containerd is alive (pid file, comm and exact --config match).
running() {
  local pid
  [[ -s $PIDFILE ]] || return 1
  pid=$(<"$PIDFILE")
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/comm && $(<"/proc/$pid/comm") == containerd ]] || return 1
  [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") == "containerd --config $CONFIG " ]]
}

# The binaries are named in the config (so a change of binaries is a change of config):
# config_bindir is the directory of containerd, ctr and the shim, config_runc runc.
config_bindir() { sed -n 's/^# containerd binaries: //p' "$CONFIG"; }
config_runc() { sed -n 's/^ *BinaryName = "\(.*\)"$/\1/p' "$CONFIG" | head -n 1; }
ctr() { command "$(config_bindir)/ctr" "$@"; }
runc_bin() { command "$(config_runc)" "$@"; }
containerd() { command "$(config_bindir)/containerd" "$@"; }

# start_containerd: start in its own session; the pid is written by the process that
# execs containerd, so it is right even when setsid has to fork. The binaries'
# directory comes first on its PATH: containerd looks the shim up there.
start_containerd() {
  [[ -s $CONFIG ]] || die "$CONFIG missing; run $0 without --restart-only first"
  local bindir
  bindir=$(config_bindir)
  [[ -x $bindir/containerd ]] || die "$bindir/containerd (named in $CONFIG) missing; run $0 without --restart-only"
  rm -f "$SOCK" "$SOCK.ttrpc" "$PIDFILE"
  LOG_OFFSET=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
  echo "---- $(date -Is) containerd-up.sh starting containerd" >>"$LOG"
  # shellcheck disable=SC2016 # expanded by the inner shell
  PATH=$bindir:$PATH setsid bash -c 'echo $$ >"$1"; exec containerd --config "$2"' _ "$PIDFILE" "$CONFIG" \
    </dev/null >>"$LOG" 2>&1 9>&- &
  for _ in $(seq 50); do [[ -s $PIDFILE ]] && break; sleep 0.05; done
  sleep 0.1
  running || { tail -n 30 "$LOG" >&2; die "containerd did not start; see $LOG"; }
  cp "$CONFIG" "$DIR/config.running.toml"
  log "started containerd pid $(<"$PIDFILE") (log $LOG)"
  STARTED=1
}

stop_containerd() {
  local pid
  pid=$(<"$PIDFILE")
  log "stopping containerd pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  if [[ -d /proc/$pid ]]; then log "containerd $pid ignored SIGTERM for 10s; SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  for _ in $(seq 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  rm -f "$PIDFILE"
}

# wait_ready: the API answers, the CRI plugin loaded ("ok" in plugins ls) and, if we
# just started it, the CRI service finished its start sequence (it logs "Start
# streaming server" right before it marks itself initialised; CRI calls before that
# fail with "server is not initialized yet").
wait_ready() {
  local deadline=$((SECONDS + TIMEOUT)) api=0 cri=0 booted=0
  while ((SECONDS < deadline)); do
    running || { tail -n 30 "$LOG" >&2; die "containerd exited while starting; see $LOG"; }
    if ((!api)) && ctr -a "$SOCK" --timeout 2s version >/dev/null 2>&1; then api=1; fi
    if ((api && !cri)) && ctr -a "$SOCK" --timeout 2s plugins ls 2>/dev/null |
        awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" && $NF == "ok" {f=1} END {exit !f}'; then
      cri=1
    fi
    if ((cri)); then
      if ((!STARTED)); then booted=1
      elif tail -c +"$((LOG_OFFSET + 1))" "$LOG" | grep -q 'Start streaming server'; then booted=1
      fi
    fi
    if ((booted)); then log "containerd ready (CRI plugin ok) on $SOCK"; return 0; fi
    sleep 0.2
  done
  tail -n 30 "$LOG" >&2
  die "containerd not ready after ${TIMEOUT}s (api=$api cri-plugin=$cri cri-started=$booted); see $LOG"
}

write_env() {
  local tmp
  tmp=$(mktemp "$DIR/.env.XXXXXX")
  {
    printf 'export NODEKIT_CRI_ENDPOINT=%q\n' "unix://$SOCK"
    printf 'export NODEKIT_CONTAINERD_DIR=%q\n' "$DIR"
    printf 'export NODEKIT_CONTAINERD_PIDFILE=%q\n' "$PIDFILE"
    printf 'export NODEKIT_IMAGE_DIR=%q\n' "$IMAGES"
    printf 'export NODEKIT_CONTAINERD_CERTS_D=%q\n' "$DIR/certs.d"
    printf 'export NODEKIT_CTR=%q\n' "$(config_bindir)/ctr"
    printf 'export NODEKIT_CONTAINERD_SOCK=%q\n' "$SOCK"
    printf 'export NODEKIT_CONTAINERD_LOG=%q\n' "$LOG"
    printf 'export NODEKIT_CONTAINERD_VERSION=%q\n' "$(containerd --version | awk '{sub(/^v/, "", $3); print $3}')"
    printf 'export NODEKIT_RUNC_VERSION=%q\n' "$(runc_bin --version | awk 'NR == 1 {print $3}')"
  } >"$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$DIR/env"
}

STARTED=0
LOG_OFFSET=0
if ((RESTART_ONLY)); then log "start (DIR=$DIR, --restart-only)"; else log "start (DIR=$DIR)"; fi

if ((RESTART_ONLY)); then
  if running; then log "containerd already running, pid $(<"$PIDFILE")"; else start_containerd; fi
  wait_ready
  write_env
  echo "NODEKIT_CRI_ENDPOINT=unix://$SOCK"
  exit 0
fi

# ------------------------------------------------------------------ 1. packages, binaries
# built: containerd and runc from the Go module proxy (hack/lib-containerd-build.sh);
# runc needs cgo and libseccomp, installed only when runc must be built. The CRI
# plugin brings lo up itself (use_internal_loopback), so no CNI plugins package.
# debian: the packages, as before containerd 2.
need=(iproute2 util-linux)
if [[ $MODE == debian ]]; then
  need+=(containerd runc containernetworking-plugins)
else
  ctrd_bins_dirs
  if ! "$RUNC_BIN_DIR/runc" --version 2>/dev/null | grep -qx "runc version $RUNC_VERSION"; then
    need+=(gcc libc6-dev pkg-config libseccomp-dev)
  fi
fi
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing with apt: ${missing[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  # Without systemd as PID 1 the packages start nothing; /etc/containerd is never used.
fi
for c in nsenter ip; do command -v "$c" >/dev/null || die "$c not found after install"; done
command -v go >/dev/null || die "go not found (expected in /usr/local/go/bin)"
if [[ $MODE == debian ]]; then
  CONTAINERD_BIN_DIR=/usr/bin RUNC=/usr/sbin/runc
  [[ -x /usr/lib/cni/loopback ]] || die "/usr/lib/cni/loopback missing (containernetworking-plugins)"
else
  ctrd_bins_ensure || die "building containerd v$CONTAINERD_VERSION / runc v$RUNC_VERSION failed"
  RUNC=$RUNC_BIN_DIR/runc
fi
for c in containerd ctr containerd-shim-runc-v2; do
  [[ -x $CONTAINERD_BIN_DIR/$c ]] || die "$CONTAINERD_BIN_DIR/$c missing"
done
[[ -x $RUNC ]] || die "$RUNC missing"
log "containerd $("$CONTAINERD_BIN_DIR/containerd" --version | awk '{print $3}') from $CONTAINERD_BIN_DIR, $("$RUNC" --version | head -n 1)"

mkdir -p "$BIN" "$IMAGES" "$DIR/cni/bin" "$DIR/cni/net.d" "$DIR/opt" "$DIR/certs.d"

# put FILE MODE <content: replace FILE atomically, only if the content changed
# (containerd watches the CNI conf dir; rewriting in place can trigger a reload error).
put() {
  local dst=$1 mode=$2 tmp
  tmp=$(mktemp "$DIR/.put.XXXXXX")
  cat >"$tmp"
  if cmp -s "$tmp" "$dst"; then rm -f "$tmp"; return 0; fi
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$dst"
}

# ------------------------------------------------------------------ 2. config
# (a) OOM scores: without CAP_SYS_RESOURCE no process may lower oom_score_adj, and CRI
#     asks -998 for sandboxes; every RunPodSandbox then fails with runc's
#     "can't get final child's PID from pipe: EOF". restrict_oom_score_adj clamps the
#     requested values to containerd's own score.
capbnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
capeff=$((16#$(awk '/^CapEff:/ {print $2}' /proc/self/status)))
if (( (capbnd >> 24) & (capeff >> 24) & 1 )); then RESTRICT_OOM=false; else RESTRICT_OOM=true; fi
log "CAP_SYS_RESOURCE $([[ $RESTRICT_OOM == false ]] && echo present || echo absent) -> restrict_oom_score_adj=$RESTRICT_OOM"

# (b) Loopback-only pod network. containerd (1.6 and 2.x) wants an IP on eth0 for pods
#     without hostNetwork ("failed to find network info for sandbox"). nodekit-lo only
#     brings lo up inside the pod's netns and reports 127.0.0.1 on $CNI_IFNAME: no veth,
#     no bridge, no route, nothing on the host. containerd 1.6 also needs the stock
#     "loopback" plugin in bin_dir (it always configures lo with it); containerd 2 is
#     told to bring lo up itself (use_internal_loopback).
put "$DIR/cni/bin/nodekit-lo" 0755 <<'EOF'
#!/bin/sh
# nodekit-lo: loopback-only CNI plugin (see hack/containerd-up.sh). Never touches the host.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
conf=$(cat)
ver=$(printf '%s' "$conf" | sed -n 's/.*"cniVersion"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
[ -n "$ver" ] || ver=0.4.0
case "$CNI_COMMAND" in
ADD)
  nsenter --net="$CNI_NETNS" ip link set lo up || {
    printf '{"cniVersion":"%s","code":11,"msg":"nodekit-lo: cannot bring lo up in %s"}\n' "$ver" "$CNI_NETNS"; exit 1; }
  printf '{"cniVersion":"%s","interfaces":[{"name":"%s","sandbox":"%s"}],"ips":[{"version":"4","interface":0,"address":"127.0.0.1/8"}],"dns":{}}\n' \
    "$ver" "$CNI_IFNAME" "$CNI_NETNS" ;;
DEL|CHECK) ;;
VERSION) echo '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}' ;;
*) printf '{"cniVersion":"%s","code":4,"msg":"nodekit-lo: unknown CNI_COMMAND %s"}\n' "$ver" "$CNI_COMMAND"; exit 1 ;;
esac
EOF
if [[ $MODE == debian ]]; then ln -sfn /usr/lib/cni/loopback "$DIR/cni/bin/loopback"; else rm -f "$DIR/cni/bin/loopback"; fi
put "$DIR/cni/net.d/10-nodekit-loopback.conflist" 0644 <<'EOF'
{
  "cniVersion": "0.4.0",
  "name": "nodekit-loopback",
  "plugins": [ { "type": "nodekit-lo" } ]
}
EOF

# (c) cgroupfs driver (no systemd), private root/state/runc root, stream server on
#     127.0.0.1 only, pod netns mounts under the state dir. containerd 2 takes config
#     version 3, where the CRI plugin is split in three: io.containerd.cri.v1.images
#     (snapshotter, the pause image as pinned_images.sandbox), io.containerd.cri.v1.runtime
#     (runtimes, CNI, OOM and netns settings) and io.containerd.grpc.v1.cri (the
#     stream server). Debian's containerd 1.6 takes version 2 (one CRI plugin).
#     containerd >= 2.3 migrates version 3 to 4 on each start (a harmless warning in
#     the log); 3 is kept so the config also works on 2.0-2.2.
if [[ $MODE == debian ]]; then
put "$CONFIG" 0644 <<EOF
# Written by hack/containerd-up.sh; changes are overwritten.
# containerd binaries: $CONTAINERD_BIN_DIR
version = 2
root = "$DIR/root"
state = "$DIR/state"
oom_score = 0
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = $RESTRICT_OOM
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$RUNC"
        Root = "$DIR/runc"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$DIR/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$DIR/cni/bin"
    conf_dir = "$DIR/cni/net.d"
    max_conf_num = 1
EOF
else
put "$CONFIG" 0644 <<EOF
# Written by hack/containerd-up.sh; changes are overwritten.
# containerd binaries: $CONTAINERD_BIN_DIR
version = 3
root = "$DIR/root"
state = "$DIR/state"
oom_score = 0
disabled_plugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/opt"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$PAUSE_IMAGE"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$DIR/certs.d"

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = $RESTRICT_OOM
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = "$CONTAINERD_BIN_DIR/containerd-shim-runc-v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$RUNC"
        Root = "$DIR/runc"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["$DIR/cni/bin"]
    conf_dir = "$DIR/cni/net.d"
    max_conf_num = 1
    use_internal_loopback = true

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
fi

# ------------------------------------------------------------------ 3. tools
# Rebuild only if a binary is missing or older than any source file of hack/tools.
stale=0
for b in mkimage pause testbin; do
  [[ -x $BIN/$b ]] || { stale=1; break; }
  if [[ -n $(find "$TOOLS" \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$BIN/$b" -print -quit) ]]; then
    stale=1; break
  fi
done
if ((stale)); then
  log "building mkimage, pause, testbin from $TOOLS (cold Go cache: a few minutes)"
  (cd "$TOOLS" && CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags='-s -w' -o "$BIN/" ./mkimage ./pause ./testbin) >&2
  touch "$BIN/mkimage" "$BIN/pause" "$BIN/testbin"
else
  log "tools up to date in $BIN"
fi

# ------------------------------------------------------------------ 4. images
# mkimage output is deterministic, so an unchanged binary gives the same image ID.
# Rebuild an archive only if it is older than its inputs or this script.
mkimg() {
  local out=$IMAGES/$1; shift
  if [[ -s $out && $out -nt $BIN/mkimage && $out -nt $BIN/pause && $out -nt $BIN/testbin && $out -nt ${BASH_SOURCE[0]} ]]; then
    return 0
  fi
  "$BIN/mkimage" -o "$out" "$@" >&2
}
mkimg pause.tar -ref "$PAUSE_IMAGE" -file "$BIN/pause:/pause:0755" -entrypoint /pause
mkimg testbin.tar -ref "$TESTBIN_IMAGE" -file "$BIN/testbin:/testbin:0755" \
  -entrypoint /testbin -cmd serve -env PORT=8080
mkimg removable.tar -ref "$REMOVABLE_IMAGE" -file "$BIN/testbin:/testbin:0755" \
  -entrypoint /testbin -cmd serve -env PORT=8080 -label nodekit.removable=1

# ------------------------------------------------------------------ 5. containerd
if running; then
  if cmp -s "$CONFIG" "$DIR/config.running.toml"; then
    log "containerd already running with the same config, pid $(<"$PIDFILE")"
  else
    log "config changed since containerd started; restarting it (containers keep running)"
    stop_containerd
    start_containerd
  fi
else
  start_containerd
fi
wait_ready

# ------------------------------------------------------------------ 6. import
# (Output only on failure: containerd 2's ctr warns about cgroup v1 on every call.)
for img in pause testbin removable; do
  out=$(ctr -a "$SOCK" -n k8s.io images import "$IMAGES/$img.tar" 2>&1) ||
    { echo "$out" >&2; die "ctr images import $IMAGES/$img.tar failed; see $LOG"; }
done
log "images imported: $(ctr -a "$SOCK" -n k8s.io images ls -q | grep '^nodekit.local/' | tr '\n' ' ')"

write_env
log "done; source $DIR/env"
echo "NODEKIT_CRI_ENDPOINT=unix://$SOCK"
