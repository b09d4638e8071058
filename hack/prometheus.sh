#!/usr/bin/env bash
# prometheus.sh - build prometheus and promtool once from the Go module proxy for internal/promtest (#33), with
# which the integration tests have a real Prometheus scrape the agent's /metrics and /metrics/cadvisor over TLS
# with a bearer token, and `promtool check metrics` lint its exposition.
#
# Usage: hack/prometheus.sh   (hack/test.sh runs it and exports NODEKIT_PROMETHEUS_DIR)
# The last stdout line is the directory holding both binaries:
#   ${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/prometheus-$VERSION
# Nothing is built when both are there. Otherwise `go install module/cmd/...@$VERSION` (the module has no
# replace directives, so go install takes it as released, with its own go.sum) builds them as the release
# does (CGO_ENABLED=0, the version stamped from the module's VERSION file; no git revision: the proxy has
# none), with two differences: tag remove_all_sd leaves out the cloud service discoveries (a test's
# static_configs need none; file and http discovery stay), and the web UI's assets are not embedded (the
# HTTP API serves without them). Cold on 2 busy cores: 3.5-4 min (an empty Go build cache); with the Go build
# cache warm, seconds.
# Binaries are copied next to the directory and renamed into it (a reader never sees half a file).
# Env (optional): NODEKIT_BIN_CACHE (see above).
set -euo pipefail
MODULE=github.com/prometheus/prometheus
VERSION=v0.316.0 # Prometheus 3.16.0; internal/promtest.Version names the same
DEST=${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/prometheus-$VERSION
export PATH=/usr/local/go/bin:$PATH
log() { echo "[prometheus +${SECONDS}s] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for a in "$@"; do
  case $a in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 0 ;;
    *) echo "usage: $0" >&2; exit 2 ;;
  esac
done

if [[ -x $DEST/prometheus && -x $DEST/promtool ]]; then
  echo "$DEST"
  exit 0
fi
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"

work=$(mktemp -d /tmp/nodekit-prometheus-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Outside any module and workspace, with no GOFLAGS of the caller's: go install pkg@version takes the module
# as it is; GOTOOLCHAIN=local fails clearly if the local Go is older than the module's go directive.
export GOTOOLCHAIN=local GOFLAGS='' GOWORK=off CGO_ENABLED=0
cd "$work"
src=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[[ -f $src/VERSION ]] || die "could not download $MODULE@$VERSION from the Go module proxy"
release=$(<"$src/VERSION")
log "building prometheus and promtool $release ($MODULE@$VERSION) from the Go module proxy in $work"
t0=$SECONDS
GOBIN=$work/out go install -trimpath -tags remove_all_sd \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" \
  "$MODULE/cmd/prometheus@$VERSION" "$MODULE/cmd/promtool@$VERSION" || die "go install failed"
log "built in $((SECONDS - t0))s"

# Both start, and promtool lints: a counter without _total is a problem (exit 3), one with it none.
"$work/out/prometheus" --version 2>&1 | grep -q "^prometheus, version $release " || die "prometheus --version does not say $release"
printf '# HELP x_total A counter.\n# TYPE x_total counter\nx_total 1\n' | "$work/out/promtool" check metrics >/dev/null 2>&1 ||
  die "promtool check metrics refuses a good exposition"
rc=0
printf '# HELP x A counter.\n# TYPE x counter\nx 1\n' | "$work/out/promtool" check metrics >/dev/null 2>&1 || rc=$?
((rc == 3)) || die "promtool check metrics exits $rc, not 3, on a counter without _total"

mkdir -p "$DEST"
for f in prometheus promtool; do
  { cp "$work/out/$f" "$DEST/.$f.$$" && mv -f "$DEST/.$f.$$" "$DEST/$f"; } || die "cannot install $DEST/$f"
done
log "prometheus and promtool in $DEST"
echo "$DEST"
