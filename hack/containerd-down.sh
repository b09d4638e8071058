#!/usr/bin/env bash
# containerd-down.sh - stop the containerd started by hack/containerd-up.sh.
#
# Usage: hack/containerd-down.sh [--purge]
#   --purge  also unmount everything under $DIR and delete $DIR (images, state, binaries)
# Env: NODEKIT_CONTAINERD_DIR (default /tmp/nodekit-containerd), as for containerd-up.sh.
#
# Steps (each tolerates the previous one failing, so it also cleans up after a crash):
#  1. if our containerd runs (pid file + comm + exact --config): force-delete every task
#     and remove every container in every namespace with ctr (CRI pods are containerd
#     containers too), then SIGTERM containerd by pid (SIGKILL after 10s);
#  2. force-delete containers left in our runc root ($DIR/runc/*);
#  3. SIGKILL shims whose arguments contain "-address $DIR/containerd.sock", by pid;
#  4. unmount leftover CRI pod mounts (netns, shm) and, with --purge, everything under $DIR;
#  5. rmdir empty cgroup directories under /sys/fs/cgroup/*/nodekit-test (deepest first);
#     non-empty ones are listed, never forced.
# ctr and runc are the ones hack/containerd-up.sh named in $DIR/config.toml (the built
# containerd 2 or Debian's 1.6), else whatever is on PATH.
# Never kills anything by process name. Idempotent; exits 0 unless something is left behind.
set -euo pipefail

DIR=${NODEKIT_CONTAINERD_DIR:-/tmp/nodekit-containerd}
SOCK=$DIR/containerd.sock
PIDFILE=$DIR/containerd.pid
CONFIG=$DIR/config.toml
CGROUP_NAME=nodekit-test
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

PURGE=0
for a in "$@"; do
  case $a in
    --purge) PURGE=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 0 ;;
    *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
  esac
done
log() { echo "[containerd-down +${SECONDS}s] $*" >&2; }
[[ $(id -u) == 0 ]] || { log "ERROR: must run as root"; exit 1; }
case $DIR in /?*) ;; *) log "ERROR: NODEKIT_CONTAINERD_DIR must be an absolute path other than /: $DIR"; exit 1 ;; esac
LEFT=0

# The binaries containerd-up.sh wrote into the config (see config_bindir there).
CTR=ctr RUNC=runc
if [[ -s $CONFIG ]]; then
  bindir=$(sed -n 's/^# containerd binaries: //p' "$CONFIG")
  runc=$(sed -n 's/^ *BinaryName = "\(.*\)"$/\1/p' "$CONFIG" | head -n 1)
  if [[ -n $bindir && -x $bindir/ctr ]]; then CTR=$bindir/ctr; fi
  if [[ -n $runc && -x $runc ]]; then RUNC=$runc; fi
fi

# ------------------------------------------------------------------ 1. containerd
pid=
if [[ -s $PIDFILE ]]; then
  pid=$(<"$PIDFILE")
  if ! [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/comm && $(<"/proc/$pid/comm") == containerd &&
          $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") == "containerd --config $CONFIG " ]]; then
    log "pid $pid in $PIDFILE is not our containerd (any more); not signalling it"
    pid=
  fi
fi

if [[ -n $pid ]]; then
  c() { timeout 60 "$CTR" -a "$SOCK" --timeout 30s "$@"; }
  for ns in $(c namespaces ls -q 2>/dev/null); do
    tasks=$(c -n "$ns" tasks ls -q 2>/dev/null || true)
    if [[ -n $tasks ]]; then
      log "deleting $(wc -w <<<"$tasks") task(s) in namespace $ns"
      # shellcheck disable=SC2086 # one id per word
      c -n "$ns" tasks delete --force $tasks >/dev/null 2>&1 || true
    fi
    ctrs=$(c -n "$ns" containers ls -q 2>/dev/null || true)
    if [[ -n $ctrs ]]; then
      log "removing $(wc -w <<<"$ctrs") container(s) in namespace $ns"
      # shellcheck disable=SC2086
      c -n "$ns" containers rm $ctrs >/dev/null 2>&1 || log "some containers in $ns could not be removed"
    fi
  done
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  if [[ -d /proc/$pid ]]; then log "containerd $pid ignored SIGTERM for 10s; SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  for _ in $(seq 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  log "stopped containerd pid $pid"
else
  log "containerd not running"
  if ((!PURGE)) && [[ -d $DIR/root ]]; then
    log "note: containers it knew stay in its metadata (exited / NOTREADY after the next up); use --purge for a clean slate"
  fi
fi
rm -f "$PIDFILE" "$DIR/config.running.toml"

# ------------------------------------------------------------------ 2. runc leftovers
# (e.g. containerd was SIGKILLed: shims and containers outlive it)
if [[ -d $DIR/runc ]]; then
  for root in "$DIR"/runc/*/; do
    [[ -d $root ]] || continue
    for id in $("$RUNC" --root "$root" list -q 2>/dev/null); do
      log "force-deleting leftover container $id (runc root $root)"
      "$RUNC" --root "$root" delete --force "$id" >/dev/null 2>&1 || log "runc delete $id failed"
    done
  done
fi

# ------------------------------------------------------------------ 3. shims
# Exact argument match: "-address" immediately followed by our socket path.
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [[ $p == "$$" ]] && continue
  mapfile -d '' -t args 2>/dev/null <"$d/cmdline" || continue
  [[ ${args[0]:-} == *containerd-shim* ]] || continue
  for ((i = 1; i + 1 < ${#args[@]}; i++)); do
    if [[ ${args[i]} == -address && ${args[i+1]} == "$SOCK" ]]; then
      log "killing leftover shim pid $p"
      kill -KILL "$p" 2>/dev/null || true
      break
    fi
  done
done
rm -f "$SOCK" "$SOCK.ttrpc"

# ------------------------------------------------------------------ 4. mounts
# mounts_under PREFIX: mount points below PREFIX, deepest first (octal escapes decoded).
mounts_under() {
  awk -v p="$1/" 'index($2, p) == 1 {print $2}' /proc/self/mounts |
    while IFS= read -r m; do printf '%b\n' "$m"; done | sort -r -u
}
unmount_all() {
  local m
  while IFS= read -r m; do
    [[ -n $m ]] || continue
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || { log "cannot unmount $m"; continue; }
    log "unmounted $m"
  done
}
if ((PURGE)); then
  if [[ -d $DIR ]]; then mounts_under "$DIR" | unmount_all; fi
else
  # Pod netns and shm mounts of the sandboxes removed above (CRI would have unmounted
  # them; ctr does not), and rootfs mounts of tasks whose shim was killed in step 3
  # (containerd is stopped, so no mount under these directories is in use any more).
  for sub in state/io.containerd.grpc.v1.cri root/io.containerd.grpc.v1.cri state/io.containerd.runtime.v2.task; do
    if [[ -d $DIR/$sub ]]; then mounts_under "$DIR/$sub" | unmount_all; fi
  done
fi

# ------------------------------------------------------------------ 5. cgroups
# NODEKIT_KEEP_CGROUPS=1 skips this: a test's private containerd must not
# touch the test cgroups other tests are using at the same time.
[[ ${NODEKIT_KEEP_CGROUPS:-0} == 1 ]] && CGROUP_TOPS=() || CGROUP_TOPS=(/sys/fs/cgroup/*/"$CGROUP_NAME" /sys/fs/cgroup/"$CGROUP_NAME")
for top in "${CGROUP_TOPS[@]}"; do
  [[ -d $top ]] || continue
  while IFS= read -r -d '' cg; do
    rmdir "$cg" 2>/dev/null || true
  done < <(find "$top" -depth -type d -print0 2>/dev/null)
  if [[ -d $top ]]; then
    log "cgroup directories not removed (not empty; processes still inside?):"
    find "$top" -depth -type d -print0 2>/dev/null | while IFS= read -r -d '' cg; do
      procs=$(wc -l <"$cg/cgroup.procs" 2>/dev/null || echo '?')
      echo "  $cg ($procs processes)" >&2
    done
    LEFT=1
  fi
done

# ------------------------------------------------------------------ 6. purge
if ((PURGE)) && [[ -d $DIR ]]; then
  if [[ -n $(mounts_under "$DIR") ]]; then
    log "mounts remain under $DIR; not deleting it:"
    mounts_under "$DIR" | sed 's/^/  /' >&2
    LEFT=1
  else
    rm -rf --one-file-system "$DIR" && log "removed $DIR"
  fi
fi
exit "$LEFT"
