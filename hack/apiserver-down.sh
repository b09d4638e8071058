#!/usr/bin/env bash
# apiserver-down.sh - stop the kube-apiserver and etcd started by hack/apiserver-up.sh.
#
# Usage:  hack/apiserver-down.sh [--purge] [--only kube-apiserver|etcd]
#   --purge  also remove the state dir (etcd data, certificates, tokens, logs)
#   --only   stop just that process (tests use it to cut watches; apiserver-up.sh
#            starts it again on the same data)
# Only the pids in $NODEKIT_APISERVER_DIR/*.pid are signalled, and only while their
# command line still names the state dir (guards against pid reuse). Never kills by name.
set -uo pipefail
DIR=${NODEKIT_APISERVER_DIR:-/tmp/nodekit-apiserver}
log() { echo "[apiserver-down] $*" >&2; }

PURGE=0 ONLY=
while (($#)); do
  case $1 in
    --purge) PURGE=1 ;;
    --only) ONLY=${2:-}; shift
            [[ $ONLY == kube-apiserver || $ONLY == etcd ]] || { echo "--only kube-apiserver|etcd" >&2; exit 2; } ;;
    *) echo "usage: $0 [--purge] [--only kube-apiserver|etcd]" >&2; exit 2 ;;
  esac
  shift
done

is_ours() { local pid=$1; [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] &&
            tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$DIR/"; }

stop() { # NAME
  local f=$DIR/$1.pid pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  if is_ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 300); do is_ours "$pid" || break; sleep 0.1; done
    if is_ours "$pid"; then
      log "$1 (pid $pid) still running 30s after SIGTERM; SIGKILL"
      kill -KILL "$pid" 2>/dev/null; sleep 0.5
    fi
    log "stopped $1 (pid $pid)"
  fi
  rm -f "$f"
}

if [[ -n $ONLY ]]; then
  stop "$ONLY"
else
  stop kube-apiserver   # first, so it does not spin on a dead etcd
  stop etcd
fi
if [[ $PURGE == 1 ]]; then
  case $DIR in /|"") log "refusing to remove '$DIR'"; exit 1 ;; esac
  rm -rf "$DIR"; log "removed $DIR"
fi
exit 0
