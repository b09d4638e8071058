# shellcheck shell=bash
# lib-containerd-build.sh - build containerd 2 and runc from the Go module proxy.
# Sourced by hack/containerd-up.sh; defines variables and functions only.
#
# Pinned versions (the newest v2.4.x and v1.5.x the proxy serves; change them here):
#   CONTAINERD_VERSION  github.com/containerd/containerd/v2
#   RUNC_VERSION        github.com/opencontainers/runc
#
# ctrd_bins_dirs
#   Sets CONTAINERD_BIN_DIR and RUNC_BIN_DIR (see below) without building anything.
#
# ctrd_bins_ensure
#   Sets CONTAINERD_BIN_DIR and RUNC_BIN_DIR to
#   ${NODEKIT_BIN_CACHE:-$HOME/.cache/nodekit-bins}/containerd-v$CONTAINERD_VERSION
#   (containerd, ctr, containerd-shim-runc-v2) and .../runc-v$RUNC_VERSION (runc), and
#   builds whichever is missing or does not report its pinned version. Cold: ~4 min on 2 cores.
#
# ctrd_build_containerd VERSION DEST
#   cmd/containerd, cmd/ctr and cmd/containerd-shim-runc-v2 in a scratch module that
#   requires the module; CGO_ENABLED=0 (as the release's static builds: no btrfs
#   snapshotter), tags urfave_cli_no_docs (+ no_grpc for the shim, as its Makefile),
#   version stamped with -X .../version.Version (no git revision: the proxy has none), so `containerd --version` and the
#   CRI Version call report it.
#
# ctrd_build_runc VERSION DEST
#   runc with cgo and -tags "seccomp urfave_cli_no_docs" (needs gcc, pkg-config and
#   libseccomp-dev; the Makefile's libpathrs tag needs a C library Debian lacks, so
#   runc uses its Go pathrs-lite fallback). runc embeds its VERSION file, so
#   `runc --version` prints the release.
#
# Binaries are copied next to DEST and renamed into it (a reader never sees half a
# file); DEST/VERSIONS lists the module versions. Functions run in subshells and
# return non-zero, saying why on stderr, on failure.

CONTAINERD_VERSION=2.4.2
RUNC_VERSION=1.5.2

ctrd_cache() { echo "${NODEKIT_BIN_CACHE:-$HOME/.cache/nodekit-bins}"; }

# ctrd_scratch MODULE VERSION WORK: a throwaway go.mod requiring MODULE@vVERSION, with
# the go directive of that module (so GOTOOLCHAIN=local fails clearly if Go is too old).
ctrd_scratch() {
  local module=$1 version=$2 work=$3 gomod gover
  gomod=$(cd "$work" && go mod download -json "$module@v$version" |
          sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [[ -f $gomod ]] || { echo "could not download $module@v$version from the Go module proxy" >&2; return 1; }
  gover=$(awk '$1=="go"{print $2; exit}' "$gomod")
  printf 'module nodekitctrdbins\n\ngo %s\n\nrequire %s v%s\n' "$gover" "$module" "$version" > "$work/go.mod"
}

ctrd_install() { # WORK DEST
  local work=$1 dest=$2 f
  mkdir -p "$dest" || return 1
  for f in "$work"/out/*; do
    f=$(basename "$f")
    { cp "$work/out/$f" "$dest/.$f.tmp" && mv -f "$dest/.$f.tmp" "$dest/$f"; } || { echo "cannot install $dest/$f" >&2; return 1; }
  done
  { cp "$work/versions" "$dest/.VERSIONS.tmp" && mv -f "$dest/.VERSIONS.tmp" "$dest/VERSIONS"; } ||
    { echo "cannot write $dest/VERSIONS" >&2; return 1; }
}

ctrd_build_containerd() (
  local version=$1 dest=$2 work t0=$SECONDS m=github.com/containerd/containerd/v2
  say() { echo "[containerd-build +$((SECONDS - t0))s] $*" >&2; }
  command -v go >/dev/null || { say "ERROR: go not found"; return 1; }
  export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
  work=$(mktemp -d /tmp/nodekit-ctrd-build.XXXXXX) || return 1
  trap 'rm -rf "$work"' EXIT
  say "building containerd, ctr, containerd-shim-runc-v2 v$version from the Go module proxy in $work"
  ctrd_scratch "$m" "$version" "$work" || return 1
  mkdir -p "$work/out"
  local ld="-s -w -X $m/version.Version=v$version -X $m/version.Package=$m"
  (cd "$work" && go build -trimpath -tags urfave_cli_no_docs -ldflags "$ld" -o "$work/out/" "$m/cmd/containerd" "$m/cmd/ctr" &&
    go build -trimpath -tags 'urfave_cli_no_docs no_grpc' -ldflags "$ld" -o "$work/out/" "$m/cmd/containerd-shim-runc-v2") ||
    { say "ERROR: go build failed"; return 1; }
  (cd "$work" && go list -m -f '{{.Path}} {{.Version}}' "$m") > "$work/versions" || return 1
  ctrd_install "$work" "$dest" || return 1
  say "built $(cd "$work/out" && echo *) into $dest in $((SECONDS - t0))s"
)

ctrd_build_runc() (
  local version=$1 dest=$2 work t0=$SECONDS m=github.com/opencontainers/runc
  say() { echo "[runc-build +$((SECONDS - t0))s] $*" >&2; }
  command -v go >/dev/null || { say "ERROR: go not found"; return 1; }
  if ! command -v gcc >/dev/null || ! pkg-config --exists libseccomp 2>/dev/null; then
    say "ERROR: runc needs gcc, pkg-config and libseccomp-dev (apt-get install gcc pkg-config libseccomp-dev)"; return 1
  fi
  export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=1
  work=$(mktemp -d /tmp/nodekit-runc-build.XXXXXX) || return 1
  trap 'rm -rf "$work"' EXIT
  say "building runc v$version (seccomp) from the Go module proxy in $work"
  ctrd_scratch "$m" "$version" "$work" || return 1
  mkdir -p "$work/out"
  (cd "$work" && go build -trimpath -tags 'seccomp urfave_cli_no_docs' -ldflags "-s -w -X main.gitCommit=v$version" \
    -o "$work/out/runc" "$m") || { say "ERROR: go build failed"; return 1; }
  (cd "$work" && go list -m -f '{{.Path}} {{.Version}}' "$m") > "$work/versions" || return 1
  ctrd_install "$work" "$dest" || return 1
  say "built runc into $dest in $((SECONDS - t0))s"
)

ctrd_bins_dirs() {
  local cache
  cache=$(ctrd_cache)
  CONTAINERD_BIN_DIR=$cache/containerd-v$CONTAINERD_VERSION
  RUNC_BIN_DIR=$cache/runc-v$RUNC_VERSION
}

ctrd_bins_ensure() {
  ctrd_bins_dirs
  if ! { [[ -x $CONTAINERD_BIN_DIR/containerd-shim-runc-v2 && -x $CONTAINERD_BIN_DIR/ctr ]] &&
         [[ $("$CONTAINERD_BIN_DIR/containerd" --version 2>/dev/null | awk '{print $3}') == "v$CONTAINERD_VERSION" ]]; }; then
    ctrd_build_containerd "$CONTAINERD_VERSION" "$CONTAINERD_BIN_DIR" || return 1
  fi
  if ! "$RUNC_BIN_DIR/runc" --version 2>/dev/null | grep -qx "runc version $RUNC_VERSION"; then
    ctrd_build_runc "$RUNC_VERSION" "$RUNC_BIN_DIR" || return 1
  fi
}
