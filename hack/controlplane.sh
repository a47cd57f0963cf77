#!/usr/bin/env bash
# Builds the pinned control-plane binaries (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager) from upstream sources fetched through the Go module proxy,
# into a per-user cache keyed by version. Idempotent: a complete cache is left alone.
#
# Usage: hack/controlplane.sh [DIR]   (DIR defaults to the cache path printed by --print-dir)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
# Staging modules are released as v0.<minor>.<patch> alongside v1.<minor>.<patch>.
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/startupgate/controlplane"
DIR="${1:-$CACHE_ROOT/$KUBE_VERSION}"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$CACHE_ROOT/$KUBE_VERSION"
  exit 0
fi

want=(etcd kube-apiserver kube-scheduler kube-controller-manager)
complete=1
for b in "${want[@]}"; do [[ -x "$DIR/$b" ]] || complete=0; done
if [[ $complete == 1 && -f "$DIR/.versions" && "$(cat "$DIR/.versions")" == "$KUBE_VERSION $ETCD_VERSION" ]]; then
  exit 0
fi

echo "building control plane $KUBE_VERSION + etcd $ETCD_VERSION into $DIR (first time only, 10 to 25 min on 2 cores)" >&2
mkdir -p "$DIR"
# The modules of startupgate's own build, each at the version it selects (read before GOFLAGS
# below, which are for the control plane's build only). They join the Kubernetes build's
# requirements, so that minimal version selection picks the newer of the two for every module
# both use (golang.org/x/net, x/sys, k8s.io/utils, ...). Built with the same compiler flags,
# the packages both compile (client-go, api, apimachinery, std: most of cmd/gate) are then
# identical and the build cache keeps one copy: make test's gate binary, built right after
# this, reuses them instead of compiling them a second time.
root="$(cd "$(dirname "$0")/.." && pwd)"
ours="$(cd "$root" && GOFLAGS= go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# No DWARF from the compiler either (-dwarf=false): the links drop it anyway (-w). It saved a
# sixth of the CPU of a race build of our ./sim/..., but little here: a cold control plane
# took 703 s with it and without tidy, 728 s before (one cold CI run each).
export GOFLAGS="-mod=mod -gcflags=all=-dwarf=false" GOWORK=off CGO_ENABLED=0
# The compiler and linker collect garbage a quarter as often (hack/buildgc says why); this
# script only builds, so it can say so once, here.
export GOGC=400

# --- one build: kube-apiserver, kube-scheduler, kube-controller-manager and etcd ------------
# k8s.io/kubernetes replaces every k8s.io/<staging> module with ./staging/src/...; a consumer
# must replace each one with its published release instead.
#
# etcd is built in the same module and the same `go build`: the two share the standard
# library, grpc, protobuf, the etcd client, zap, otel and more, 258 packages that a cold CI
# run compiled twice when etcd was a build of its own beside this one (77 CPU-s). Minimal
# version selection then picks the newer of each module the two require, as it does for
# ours above: the apiserver's etcd client is etcd's own release, $ETCD_VERSION. Every
# binary strips symbols and DWARF (-s -w), which the tests never read and which make the
# links the slowest single-threaded steps.
kmod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
mkdir -p "$work/kube" "$work/bin"
(
  cd "$work/kube"
  {
    echo "module startupgate.local/kubebuild"
    echo
    echo "go 1.25"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION"
    echo
    awk 'NF == 2 && $1 != "k8s.io/kubernetes" { print "require " $1 " " $2 }' <<<"$ours"
    echo
    grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging/src/' "$kmod" \
      | awk -v v="$STAGING_VERSION" '{ print "replace " $1 " => " $1 " " v }'
  } > go.mod
  # No `go mod tidy`: -mod=mod lets the build add the requirements and sums it needs, where
  # tidy fetched every module the tests of every package need too (724 MB).
  # k8s.io/kubernetes's go.mod pins them all, raised to ours where ours is newer (above).
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  ld=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  go build -trimpath -ldflags "-s -w $ld" -o "$work/bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    go.etcd.io/etcd/server/v3
)
# go build names a main package of a /vN path after the element before it.
mv "$work/bin/server" "$work/bin/etcd"
mv "$work/bin/"* "$DIR/"
echo "$KUBE_VERSION $ETCD_VERSION" > "$DIR/.versions"
echo "control plane ready in $DIR" >&2
