#!/usr/bin/env bash
# Builds the pinned control-plane binaries (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager) from upstream sources fetched through the Go module proxy,
# into a per-user cache keyed by version. Idempotent: a complete cache is left alone.
#
# Usage: hack/controlplane.sh [DIR]   (DIR defaults to the cache path printed by --print-dir)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
# The compiler's flags for every package of the plane; the Makefile passes its own, which make
# test's gate is built with too, so that the two share their compiled packages. No inlining
# (-l): the plane is built once per machine and a cold make test is bound by CPU, so the
# build's saving outweighs the scenarios' small extra cost (docs/development.md has both).
PLANE_GCFLAGS="${PLANE_GCFLAGS:-all=-dwarf=false -l}"
# What the cache holds: a cache built another way is built again.
KEY="$KUBE_VERSION (etcd as it requires) -gcflags=$PLANE_GCFLAGS"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/startupgate/controlplane"
DIR="${1:-$CACHE_ROOT/$KUBE_VERSION}"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$CACHE_ROOT/$KUBE_VERSION"
  exit 0
fi

want=(etcd kube-apiserver kube-scheduler kube-controller-manager)
complete=1
for b in "${want[@]}"; do [[ -x "$DIR/$b" ]] || complete=0; done
if [[ $complete == 1 && -f "$DIR/.versions" && "$(cat "$DIR/.versions")" == "$KEY" ]]; then
  exit 0
fi

mkdir -p "$DIR"
# The go commands' output (hundreds of "go: downloading" lines) goes to a log; the terminal
# gets one line, and the log's tail if the build fails.
log="$DIR/build.log"
: >"$log"
echo "building control plane $KUBE_VERSION and its etcd into $DIR (first time only, several minutes; log: $log)" >&2
logged() {
  if ! "$@" 2>>"$log"; then
    echo "control-plane build failed; the last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}
# hack/pins.sh holds the build to startupgate's module versions, so that make test's gate
# reuses the plane's compiled client-go, api and apimachinery instead of compiling them again.
root="$(cd "$(dirname "$0")/.." && pwd)"
pins="$(logged "$root/hack/pins.sh" "$KUBE_VERSION")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="-mod=mod '-gcflags=$PLANE_GCFLAGS'" GOWORK=off CGO_ENABLED=0
# The compiler and linker collect garbage a quarter as often (hack/buildgc says why); this
# script only builds, so it can say so once, here.
export GOGC=400

# --- one build: kube-apiserver, kube-scheduler, kube-controller-manager and etcd ------------
# etcd is built in the same module and the same `go build`, so that the packages it shares
# with Kubernetes compile once, and at the release k8s.io/kubernetes's go.mod requires, so
# that its requirements raise no module above startupgate's (which would make the test gate
# compile those packages again). Symbols and DWARF are stripped (-s -w): nothing reads them.
kmod="$(logged go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2 }' "$kmod")"
[[ -n $etcd_version ]] || { echo "k8s.io/kubernetes $KUBE_VERSION requires no go.etcd.io/etcd/server/v3" >&2; exit 1; }
mkdir -p "$work/kube" "$work/bin"
(
  cd "$work/kube"
  {
    echo "module startupgate.local/kubebuild"
    echo
    echo "go 1.25"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo "require go.etcd.io/etcd/server/v3 $etcd_version"
    echo
    echo "$pins"
  } > go.mod
  # No `go mod tidy`, which would fetch the modules of every package's tests too: -mod=mod
  # lets the build add only the requirements and sums it needs.
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  ld=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  logged go build -trimpath -ldflags "-s -w $ld" -o "$work/bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    go.etcd.io/etcd/server/v3
)
# go build names a main package of a /vN path after the element before it.
mv "$work/bin/server" "$work/bin/etcd"
mv "$work/bin/"* "$DIR/"
echo "$KEY" > "$DIR/.versions"
echo "control plane ready in $DIR (etcd $etcd_version)" >&2
