#!/usr/bin/env bash
# Builds Karpenter's KWOK provider (sigs.k8s.io/karpenter/kwok) at a pinned version from the
# Go module proxy, with the CRDs it needs from the same module, into a per-user cache keyed
# by version. Idempotent: a complete cache is left alone.
#
# Usage: hack/karpenter.sh [DIR]   (DIR defaults to the cache path printed by --print-dir)
set -euo pipefail

# v1.14.1 builds with the local toolchain (v1.15.0 needs a newer go) and already treats
# readiness.k8s.io/ taints as ephemeral.
KARPENTER_VERSION="${KARPENTER_VERSION:-v1.14.1}"
KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
# The plane's compiler flags (hack/controlplane.sh): with them and startupgate's module
# versions, Karpenter reuses the plane's compiled client-go, api and apimachinery.
PLANE_GCFLAGS="${PLANE_GCFLAGS:-all=-dwarf=false -l}"
# What the cache holds: a cache built another way is built again.
KEY="$KARPENTER_VERSION with startupgate's modules, -gcflags=$PLANE_GCFLAGS"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/startupgate/karpenter"
DIR="${1:-$CACHE_ROOT/$KARPENTER_VERSION}"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$CACHE_ROOT/$KARPENTER_VERSION"
  exit 0
fi

# Where each CRD lives in the module; the cache holds them flat, by file name.
crds=(
  kwok/charts/crds/karpenter.sh_nodepools.yaml
  kwok/charts/crds/karpenter.sh_nodeclaims.yaml
  kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml
)
complete=1
[[ -x "$DIR/karpenter" ]] || complete=0
for c in "${crds[@]}"; do [[ -f "$DIR/$(basename "$c")" ]] || complete=0; done
if [[ $complete == 1 && -f "$DIR/.version" && "$(cat "$DIR/.version")" == "$KEY" ]]; then
  exit 0
fi

mkdir -p "$DIR"
rm -f "$DIR/.version"
log="$DIR/build.log"
: >"$log"
quietly="$(cd "$(dirname "$0")" && pwd)/quietly"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A module of its own, held to startupgate's module versions by hack/pins.sh: Karpenter
# v1.14.1 asks for k8s.io v0.35 and controller-runtime v0.23 and builds with v0.36 and v0.24,
# and compiling client-go and its kin a second time, at other versions, took a cold make test
# minutes it does not have. Static, so the binary runs on any machine of the same OS and
# architecture.
pins="$("$(dirname "$0")/pins.sh" "$KUBE_VERSION" 2>>"$log")" || { echo "hack/pins.sh failed; see $log" >&2; exit 1; }
export GOFLAGS="-mod=mod '-gcflags=$PLANE_GCFLAGS'" GOWORK=off CGO_ENABLED=0
# The compiler and linker collect garbage a quarter as often (hack/buildgc says why).
export GOGC=400

src="$(go mod download -json "sigs.k8s.io/karpenter@$KARPENTER_VERSION" 2>>"$log" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
[[ -n $src && -f $src/go.mod ]] || { echo "downloading sigs.k8s.io/karpenter $KARPENTER_VERSION failed; see $log" >&2; exit 1; }
# The scratch module states the go version Karpenter needs, so the build never edits it.
gover="$(awk '$1 == "go" { print $2; exit }' "$src/go.mod")"
printf 'module startupgate.local/karpenterbuild\n\ngo %s\n\nrequire sigs.k8s.io/karpenter %s\n\n%s\n' \
  "$gover" "$KARPENTER_VERSION" "$pins" >"$work/go.mod"
# No `go mod tidy`, which would fetch the modules of every package's tests too: -mod=mod lets
# the build add only the requirements and sums it needs. Symbols and DWARF are stripped:
# nothing reads them.
(
  cd "$work"
  "$quietly" "$log" "building Karpenter's KWOK provider $KARPENTER_VERSION into $DIR (first time only, a few minutes)" \
    go build -trimpath -ldflags "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=$KARPENTER_VERSION" \
    -o "$DIR/karpenter" sigs.k8s.io/karpenter/kwok
)
for c in "${crds[@]}"; do
  install -m 0644 "$src/$c" "$DIR/$(basename "$c")"
done
echo "$KEY" >"$DIR/.version"
