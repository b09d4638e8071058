# shellcheck shell=bash
# lib-k8s-build.sh - build Kubernetes binaries from the Go module proxy. Sourced by
# hack/apiserver-up.sh (kube-apiserver, etcd) and hack/e2e-kubectl.sh (kubectl);
# defines functions only.
#
# k8s_build VERSION DEST PKG...
#   Builds PKG... (k8s.io/kubernetes/cmd/kube-apiserver, k8s.io/kubernetes/cmd/kubectl,
#   go.etcd.io/etcd/server/v3, ...) in a scratch module that requires k8s.io/kubernetes
#   vVERSION and replaces every staging module listed in its go.mod
#   (k8s.io/api => ./staging/...) with k8s.io/<name> v0.<minor>.<patch>; the version is
#   stamped as the release build does (else /version says v0.0.0-master). Each binary
#   is moved into DEST (created) on its own, named after its package (etcd's "server"
#   becomes "etcd"), so other binaries already in DEST stay; DEST/VERSIONS gains the
#   module versions built. Never runs "go mod tidy": it pulls test-only dependencies,
#   some refused by the proxy. Cold: minutes per binary on 2 cores and a ~3 GB Go build
#   cache, shared by every binary built this way. Returns non-zero, saying why on
#   stderr, on failure; runs in a subshell (no traps or variables leak to the caller).

k8s_build() (
  local version=$1 dest=$2; shift 2
  local work gomod staging minor gover ldflags vpkg m f t0=$SECONDS
  say() { echo "[k8s-build +$((SECONDS - t0))s] $*" >&2; }
  fail() { say "ERROR: $*"; return 1; }
  (($# > 0)) || { fail "k8s_build VERSION DEST PKG...: no packages"; return 1; }
  command -v go >/dev/null || { fail "go not found"; return 1; }
  export GOTOOLCHAIN=local GOFLAGS=-mod=mod
  work=$(mktemp -d /tmp/nodekit-k8s-build.XXXXXX) || return 1
  trap 'rm -rf "$work"' EXIT
  say "building $* (Kubernetes v$version) from the Go module proxy in $work"
  gomod=$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$version" |
          sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [[ -f $gomod ]] || { fail "could not download k8s.io/kubernetes@v$version"; return 1; }
  staging=$(grep -oE '^[[:space:]]+k8s\.io/[A-Za-z0-9._-]+ => \./staging/' "$gomod" | awk '{print $1}')
  [[ -n $staging ]] || { fail "no staging replace directives in $gomod"; return 1; }
  gover=$(awk '$1=="go"{print $2; exit}' "$gomod")
  minor=${version#1.}; minor=${minor%%.*}
  {
    printf 'module nodekitk8sbins\n\ngo %s\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$gover" "$version"
    for m in $staging; do printf '\t%s => %s v0.%s\n' "$m" "$m" "${version#1.}"; done
    printf ')\n'
  } > "$work/go.mod" || return 1
  ldflags="-s -w"
  for vpkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $vpkg.gitVersion=v$version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor"
    ldflags+=" -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
  done
  mkdir -p "$work/out" "$dest" || { fail "cannot create $dest"; return 1; }
  (cd "$work" && go build -trimpath -ldflags "$ldflags" -o "$work/out/" "$@") || { fail "go build $* failed"; return 1; }
  if [[ -f $work/out/server ]]; then mv "$work/out/server" "$work/out/etcd"; fi  # go.etcd.io/etcd/server/v3
  (cd "$work" && go list -f '{{.Module.Path}} {{.Module.Version}}' "$@") > "$work/versions" ||
    { fail "go list $* failed"; return 1; }
  # Next to DEST first, then renamed: a reader never sees a half-written binary.
  for f in "$work"/out/*; do
    f=$(basename "$f")
    { cp "$work/out/$f" "$dest/.$f.tmp" && mv -f "$dest/.$f.tmp" "$dest/$f"; } || { fail "cannot install $dest/$f"; return 1; }
  done
  # The callers may run with pipefail: a missing VERSIONS must not fail the pipe.
  { { sort -u "$work/versions"; cat "$dest/VERSIONS" 2>/dev/null || true; } | awk '!seen[$1]++' > "$dest/.VERSIONS.tmp" &&
    mv -f "$dest/.VERSIONS.tmp" "$dest/VERSIONS"; } || { fail "cannot write $dest/VERSIONS"; return 1; }
  say "built $(cd "$work/out" && echo *) into $dest in $((SECONDS - t0))s"
)
