#!/usr/bin/env bash
# containerd-up.sh - start a private containerd (CRI v1) for nodekit's integration tests.
#
# Usage:  hack/containerd-up.sh [--restart-only]
#   (no flag)       install missing packages, write config, build hack/tools, build the
#                   test images, start containerd unless it already runs with the same
#                   config, wait for CRI, import the images, write $DIR/env.
#   --restart-only  only start containerd again if it is not running (e.g. after a test
#                   killed it) and wait for CRI; builds and imports nothing.
#
# Env:
#   NODEKIT_CONTAINERD_DIR      state/config dir (default /tmp/nodekit-containerd)
#   NODEKIT_CONTAINERD_TIMEOUT  seconds to wait for CRI readiness (default 60)
#
# Everything lives under $DIR: config.toml, containerd.sock, containerd.pid,
# containerd.log, root/, state/, runc/, cni/, bin/ (mkimage, pause, testbin),
# images/ (pause.tar, testbin.tar, removable.tar) and env (export lines for tests):
#   NODEKIT_CRI_ENDPOINT NODEKIT_CONTAINERD_DIR NODEKIT_CONTAINERD_PIDFILE
#   NODEKIT_IMAGE_DIR NODEKIT_CTR NODEKIT_CONTAINERD_SOCK NODEKIT_CONTAINERD_LOG
# Images (namespace k8s.io): nodekit.local/pause:1 (sandbox image),
# nodekit.local/testbin:1 (entrypoint /testbin, cmd serve, PORT=8080) and
# nodekit.local/removable:1 (same binary, label nodekit.removable=1, so a distinct
# image ID; tests remove it and re-import $NODEKIT_IMAGE_DIR/removable.tar).
#
# Progress goes to stderr; the last stdout line is NODEKIT_CRI_ENDPOINT=unix://$DIR/containerd.sock.
# Idempotent: packages, tool builds and image archives are only redone when missing or
# stale; a running containerd with the same config is kept. Two machine-specific
# settings are explained in section 2 below. Stop with hack/containerd-down.sh
# [--purge]; nothing is ever killed by process name.
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
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

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

# start_containerd: start in its own session; the pid is written by the process that
# execs containerd, so it is right even when setsid has to fork.
start_containerd() {
  [[ -s $CONFIG ]] || die "$CONFIG missing; run $0 without --restart-only first"
  rm -f "$SOCK" "$SOCK.ttrpc" "$PIDFILE"
  LOG_OFFSET=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
  echo "---- $(date -Is) containerd-up.sh starting containerd" >>"$LOG"
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'echo $$ >"$1"; exec containerd --config "$2"' _ "$PIDFILE" "$CONFIG" \
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
    printf 'export NODEKIT_CTR=%q\n' "$(command -v ctr)"
    printf 'export NODEKIT_CONTAINERD_SOCK=%q\n' "$SOCK"
    printf 'export NODEKIT_CONTAINERD_LOG=%q\n' "$LOG"
  } >"$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$DIR/env"
}

STARTED=0
LOG_OFFSET=0
if ((RESTART_ONLY)); then log "start (DIR=$DIR, --restart-only)"; else log "start (DIR=$DIR)"; fi

if ((RESTART_ONLY)); then
  command -v containerd >/dev/null || die "containerd not installed; run $0 without --restart-only first"
  if running; then log "containerd already running, pid $(<"$PIDFILE")"; else start_containerd; fi
  wait_ready
  write_env
  echo "NODEKIT_CRI_ENDPOINT=unix://$SOCK"
  exit 0
fi

# ------------------------------------------------------------------ 1. packages
need=()
for p in containerd runc containernetworking-plugins iproute2 util-linux; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if ((${#need[@]})); then
  log "installing with apt: ${need[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
  # Without systemd as PID 1 the package starts nothing; /etc/containerd is never used.
fi
for c in containerd ctr runc nsenter ip; do command -v "$c" >/dev/null || die "$c not found after install"; done
[[ -x /usr/lib/cni/loopback ]] || die "/usr/lib/cni/loopback missing (containernetworking-plugins)"
command -v go >/dev/null || die "go not found (expected in /usr/local/go/bin)"

mkdir -p "$BIN" "$IMAGES" "$DIR/cni/bin" "$DIR/cni/net.d" "$DIR/opt"

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

# (b) Loopback-only pod network. containerd 1.6 wants an IP on eth0 for pods without
#     hostNetwork ("failed to find network info for sandbox"). nodekit-lo only brings
#     lo up inside the pod's netns and reports 127.0.0.1 on $CNI_IFNAME: no veth, no
#     bridge, no route, nothing on the host. The stock "loopback" plugin must also be
#     in bin_dir (the CRI plugin always configures lo with it).
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
ln -sfn /usr/lib/cni/loopback "$DIR/cni/bin/loopback"
put "$DIR/cni/net.d/10-nodekit-loopback.conflist" 0644 <<'EOF'
{
  "cniVersion": "0.4.0",
  "name": "nodekit-loopback",
  "plugins": [ { "type": "nodekit-lo" } ]
}
EOF

# (c) cgroupfs driver (no systemd), private root/state/runc root, stream server on
#     127.0.0.1 only, pod netns mounts under the state dir.
put "$CONFIG" 0644 <<EOF
# Written by hack/containerd-up.sh; changes are overwritten.
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
        BinaryName = "$(command -v runc)"
        Root = "$DIR/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$DIR/cni/bin"
    conf_dir = "$DIR/cni/net.d"
    max_conf_num = 1
EOF

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
for img in pause testbin removable; do
  ctr -a "$SOCK" -n k8s.io images import "$IMAGES/$img.tar" >/dev/null ||
    die "ctr images import $IMAGES/$img.tar failed; see $LOG"
done
log "images imported: $(ctr -a "$SOCK" -n k8s.io images ls -q | grep '^nodekit.local/' | tr '\n' ' ')"

write_env
log "done; source $DIR/env"
echo "NODEKIT_CRI_ENDPOINT=unix://$SOCK"
