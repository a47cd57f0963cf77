#!/usr/bin/env bash
# Builds the pinned control-plane binaries (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager) from upstream sources fetched through the Go module proxy,
# into a per-user cache keyed by version. Idempotent: a complete cache is left alone.
#
# Usage: hack/controlplane.sh [DIR]   (DIR defaults to the cache path printed by --print-dir)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
# The compiler's flags for every package of the plane (the Makefile passes its own, which
# make test's gate binary is built with too, so that the two share their compiled packages).
# No DWARF (-dwarf=false): the links drop it anyway (-w). No inlining (-l): a cold build of
# the plane took 988 CPU-s and 512 s without inlining, 1158 and 600 with it. The scenarios
# pay for it: TestScenarios and TestNegativeControls took 359 and 351 CPU-s on planes so
# built against 333 and 323 with inlining (one run each, alternating), about 8% more; the
# whole sim package's runs (609 against 595) were within their own spread. make test builds
# the plane once per machine and is bound by CPU from start to end, so the build's 170 CPU-s
# outweigh the scenarios' 25 to 35 there.
PLANE_GCFLAGS="${PLANE_GCFLAGS:-all=-dwarf=false -l}"
# Staging modules are released as v0.<minor>.<patch> alongside v1.<minor>.<patch>.
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
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

echo "building control plane $KUBE_VERSION and its etcd into $DIR (first time only, 8 to 9 min on 2 cores)" >&2
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
export GOFLAGS="-mod=mod '-gcflags=$PLANE_GCFLAGS'" GOWORK=off CGO_ENABLED=0
# The compiler and linker collect garbage a quarter as often (hack/buildgc says why); this
# script only builds, so it can say so once, here.
export GOGC=400

# --- one build: kube-apiserver, kube-scheduler, kube-controller-manager and etcd ------------
# k8s.io/kubernetes replaces every k8s.io/<staging> module with ./staging/src/...; a consumer
# must replace each one with its published release instead.
#
# etcd is built in the same module and the same `go build`, at the release that
# k8s.io/kubernetes's own go.mod requires (so the Kubernetes version is pinned once and etcd's
# derives from it). Its requirements are then already part of the Kubernetes build's module
# graph and raise nothing: a newer etcd (v3.6.16) raised x/net, x/sys, x/text and logr above
# startupgate's versions, and make test's gate binary compiled 430 packages again instead of
# reusing the plane's. In one build the two share the standard library, grpc, protobuf, the
# etcd client and more, 258 packages that a cold CI run compiled twice when etcd was a
# build of its own beside this one. Every binary strips symbols and DWARF (-s -w), which the
# tests never read and which make the links the slowest single-threaded steps.
kmod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
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
echo "$KEY" > "$DIR/.versions"
echo "control plane ready in $DIR (etcd $etcd_version)" >&2
