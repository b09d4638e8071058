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
#   module versions built. Built with the release build's tags (K8S_RELEASE_TAGS: hack/lib/golang.sh's
#   non-debug "selinux,notest,grpcnotrace"; grpcnotrace drops x/net/trace, whose html/template
#   keeps every exported method alive, so the linker's dead-code elimination works).
#   Never runs "go mod tidy": it pulls test-only dependencies,
#   some refused by the proxy. Cold: minutes per binary on 2 cores and a ~3 GB Go build
#   cache, shared by every binary built this way. Returns non-zero, saying why on
#   stderr, on failure; runs in a subshell (no traps or variables leak to the caller).

# k8s_build_test VERSION DEST NAME SRCDIR TAGS
#   Builds the Go test package in SRCDIR (its *_test.go files, which import
#   k8s.io/kubernetes test packages) with `go test -c -tags TAGS` in the same kind of
#   scratch module, as DEST/NAME. hack/conformance.sh builds its e2e suite this way.
#
# Both share k8s_scratch_module, which writes the scratch module's go.mod, and
# k8s_install, which moves the binaries into DEST.

k8s_scratch_module() { # VERSION WORK
  local version=$1 work=$2 gomod staging gover m
  gomod=$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$version" |
          sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [[ -f $gomod ]] || { echo "could not download k8s.io/kubernetes@v$version" >&2; return 1; }
  staging=$(grep -oE '^[[:space:]]+k8s\.io/[A-Za-z0-9._-]+ => \./staging/' "$gomod" | awk '{print $1}')
  [[ -n $staging ]] || { echo "no staging replace directives in $gomod" >&2; return 1; }
  gover=$(awk '$1=="go"{print $2; exit}' "$gomod")
  {
    printf 'module nodekitk8sbins\n\ngo %s\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$gover" "$version"
    for m in $staging; do printf '\t%s => %s v0.%s\n' "$m" "$m" "${version#1.}"; done
    printf ')\n'
  } > "$work/go.mod"
}

K8S_RELEASE_TAGS=selinux,notest,grpcnotrace

k8s_ldflags() { # VERSION: stamp the version as the release build does (else v0.0.0-master)
  local version=$1 minor vpkg ldflags="-s -w"
  minor=${version#1.}; minor=${minor%%.*}
  for vpkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $vpkg.gitVersion=v$version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor"
    ldflags+=" -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$ldflags"
}

k8s_install() { # WORK DEST: WORK/out/* and WORK/versions into DEST
  local work=$1 dest=$2 f
  # Next to DEST first, then renamed: a reader never sees a half-written binary.
  for f in "$work"/out/*; do
    f=$(basename "$f")
    { cp "$work/out/$f" "$dest/.$f.tmp" && mv -f "$dest/.$f.tmp" "$dest/$f"; } || { echo "cannot install $dest/$f" >&2; return 1; }
  done
  # The callers may run with pipefail: a missing VERSIONS must not fail the pipe.
  { { sort -u "$work/versions"; cat "$dest/VERSIONS" 2>/dev/null || true; } | awk '!seen[$1]++' > "$dest/.VERSIONS.tmp" &&
    mv -f "$dest/.VERSIONS.tmp" "$dest/VERSIONS"; } || { echo "cannot write $dest/VERSIONS" >&2; return 1; }
}

k8s_build() (
  local version=$1 dest=$2; shift 2
  local work t0=$SECONDS
  say() { echo "[k8s-build +$((SECONDS - t0))s] $*" >&2; }
  fail() { say "ERROR: $*"; return 1; }
  (($# > 0)) || { fail "k8s_build VERSION DEST PKG...: no packages"; return 1; }
  command -v go >/dev/null || { fail "go not found"; return 1; }
  export GOTOOLCHAIN=local GOFLAGS=-mod=mod
  work=$(mktemp -d /tmp/nodekit-k8s-build.XXXXXX) || return 1
  trap 'rm -rf "$work"' EXIT
  say "building $* (Kubernetes v$version) from the Go module proxy in $work"
  k8s_scratch_module "$version" "$work" || { fail "scratch module"; return 1; }
  mkdir -p "$work/out" "$dest" || { fail "cannot create $dest"; return 1; }
  (cd "$work" && go build -trimpath -tags "$K8S_RELEASE_TAGS" -ldflags "$(k8s_ldflags "$version")" -o "$work/out/" "$@") ||
    { fail "go build $* failed"; return 1; }
  if [[ -f $work/out/server ]]; then mv "$work/out/server" "$work/out/etcd"; fi  # go.etcd.io/etcd/server/v3
  (cd "$work" && go list -f '{{.Module.Path}} {{.Module.Version}}' "$@") > "$work/versions" ||
    { fail "go list $* failed"; return 1; }
  k8s_install "$work" "$dest" || { fail "install into $dest"; return 1; }
  say "built $(cd "$work/out" && echo *) into $dest in $((SECONDS - t0))s"
)

k8s_build_test() (
  local version=$1 dest=$2 name=$3 src=$4 tags=$5
  local work t0=$SECONDS
  say() { echo "[k8s-build +$((SECONDS - t0))s] $*" >&2; }
  fail() { say "ERROR: $*"; return 1; }
  command -v go >/dev/null || { fail "go not found"; return 1; }
  export GOTOOLCHAIN=local GOFLAGS=-mod=mod
  work=$(mktemp -d /tmp/nodekit-k8s-build.XXXXXX) || return 1
  trap 'rm -rf "$work"' EXIT
  say "building the test binary $name from $src (Kubernetes v$version) in $work"
  k8s_scratch_module "$version" "$work" || { fail "scratch module"; return 1; }
  mkdir -p "$work/out" "$work/suite" "$dest" || { fail "cannot create $dest"; return 1; }
  cp "$src"/*_test.go "$work/suite/" || { fail "no *_test.go in $src"; return 1; }
  (cd "$work" && go test -c -vet=off -tags "$tags" -trimpath -ldflags "$(k8s_ldflags "$version")" \
    -o "$work/out/$name" ./suite) || { fail "go test -c $src failed"; return 1; }
  (cd "$work" && go list -m -f '{{.Path}} {{.Version}}' k8s.io/kubernetes) > "$work/versions" ||
    { fail "go list failed"; return 1; }
  k8s_install "$work" "$dest" || { fail "install into $dest"; return 1; }
  say "built $name into $dest in $((SECONDS - t0))s"
)
