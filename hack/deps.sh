#!/usr/bin/env bash
# Prints, for each library package, what a program that uses it pays:
# third-party packages and modules it compiles (k8s.io/api and apimachinery
# counted like any other), whether grpc is among them, and the stripped size
# of a one-call program. Usage: bash hack/deps.sh [package-dir ...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
module=$(go list -m)

# One call per package: a function value, so the linker keeps that function
# and what it calls, as a program calling it would.
declare -A call=(
  [statuscache]='statuscache.New'
  [resources]='resources.PodQOSClass'
  [kubecontainer]='kubecontainer.HashContainer'
  [pleg]='pleg.NewGeneric'
  [pleg/plegmetrics]='plegmetrics.New'
  [prober]='prober.New'
  [prober/probe]='probe.TCP'
  [podsource]='podsource.NewFileSource'
  [podsource/apiserver]='apiserver.New'
  [cgroupmgr]='cgroupmgr.New'
  [runtime]='runtime.Dial'
  [runtime/fake]='fake.StartTemp'
  [runtime/runtimetest]='runtimetest.Run'
  [podstatus]='podstatus.Generate'
  [podstatus/apiclient]='apiclient.New'
  [podworkers]='podworkers.New'
  [podsync]='podsync.New'
  [server]='server.New'
  [volume]='volume.New'
  [volume/apiclient]='apiclient.New'
  [nodestatus]='nodestatus.New'
  [mirrorpod]='mirrorpod.New'
  [podpath]='podpath.Join'
  [fieldpath]='fieldpath.PodField'
  [server/serverauth]='serverauth.New'
  [kubeletflags]='kubeletflags.AcceptRest'
  [gc]='gc.NewContainerGC'
  [eviction]='eviction.New'
  [admission]='admission.New'
  [kuberuntime]='kuberuntime.NewManager'
  [runtime/criconv]='criconv.ContainerStateFromCRI'
  [runtime/runtimeconn]='runtimeconn.Connect'
  [server/serving]='serving.Listen'
  [nodeagent]='nodeagent.New'
  [hollow]='hollow.New'
)
order=(statuscache resources kubecontainer pleg pleg/plegmetrics prober prober/probe podsource podsource/apiserver cgroupmgr
  runtime runtime/criconv runtime/fake runtime/runtimetest runtime/runtimeconn kuberuntime podstatus podstatus/apiclient podworkers
  podsync server volume volume/apiclient nodestatus mirrorpod podpath fieldpath server/serverauth server/serving kubeletflags
  gc eviction admission nodeagent hollow)
[ $# -gt 0 ] && order=("$@")

tmp=$(mktemp -d "$PWD/hack/_deps.XXXX")
trap 'rm -rf "$tmp"' EXIT
printf '%-22s %9s %8s %5s %9s\n' package packages modules grpc binary
for p in "${order[@]}"; do
  fn=${call[$p]:?no one-call program for $p}
  dir="$tmp/${p//\//_}"
  mkdir -p "$dir"
  printf 'package main\n\nimport "%s/%s"\n\nfunc main() { f := %s; println(f != nil) }\n' "$module" "$p" "$fn" >"$dir/main.go"
  pkgs=$(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "./$p" | grep -vc "^$module" || true)
  mods=$(go list -deps -f '{{if not .Standard}}{{with .Module}}{{.Path}}{{end}}{{end}}' "./$p" | sort -u | grep -vc "^$module\$" || true)
  grpc=no
  deps=$(go list -deps "./$p")
  grep -qx google.golang.org/grpc <<<"$deps" && grpc=yes
  go build -trimpath -ldflags='-s -w' -o "$dir/bin" "./${dir#$PWD/}"
  size=$(stat -c %s "$dir/bin")
  printf '%-22s %9d %8d %5s %7.1fMB\n' "$p" "$pkgs" "$mods" "$grpc" "$(echo "$size/1048576" | bc -l)"
done
