#!/usr/bin/env bash
# Builds what a real node runs (the kubelet and kube-proxy from the plane's Kubernetes
# release, containerd 2, runc and the CNI plugins), from sources fetched through the Go
# module proxy, into a per-user cache keyed by their versions, with a static busybox for the
# images sim/node builds, and the release's kubectl, with which the real-node test runs the
# docs' commands as an operator would.
# Idempotent: a complete cache is left alone. The Debian packages they need (iptables,
# conntrack, libseccomp-dev for runc's seccomp, busybox-static) are installed when missing.
#
# Usage: hack/node.sh [--print-dir]
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
# Kubernetes 1.36 needs containerd 2.x; runc and the plugins are the newest the proxy serves.
CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.4.2}"
RUNC_VERSION="${RUNC_VERSION:-v1.5.2}"
CNI_PLUGINS_VERSION="${CNI_PLUGINS_VERSION:-v1.10.0}"
# Every part takes the plane's compiler flags: the kubelet reuses its compiled packages, the
# others its standard library, and all compile without DWARF or inlining as it does.
PLANE_GCFLAGS="${PLANE_GCFLAGS:-all=-dwarf=false -l}"
KEY="kubelet, kube-proxy and kubectl $KUBE_VERSION, containerd $CONTAINERD_VERSION, runc $RUNC_VERSION, CNI plugins $CNI_PLUGINS_VERSION, -gcflags=$PLANE_GCFLAGS"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/startupgate/node"
DIR="$CACHE_ROOT/$KUBE_VERSION"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$DIR"
  exit 0
fi

want=(kubelet kube-proxy kubectl containerd containerd-shim-runc-v2 ctr runc busybox cni/bridge cni/host-local cni/loopback)
complete=1
for b in "${want[@]}"; do [[ -x "$DIR/$b" ]] || complete=0; done
if [[ $complete == 1 && -f "$DIR/.version" && "$(cat "$DIR/.version")" == "$KEY" ]]; then
  exit 0
fi

mkdir -p "$DIR"
log="$DIR/build.log"
: >"$log"
echo "building a real node's parts ($KEY) into $DIR (first time only, a few minutes; log: $log)" >&2
logged() {
  if ! "$@" >>"$log" 2>&1; then
    echo "node build failed: $*; the last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

missing=()
command -v iptables >/dev/null || missing+=(iptables)
command -v conntrack >/dev/null || missing+=(conntrack)
pkg-config --exists libseccomp 2>/dev/null || missing+=(libseccomp-dev)
# Debian's busybox-static puts a static busybox at /bin/busybox; its busybox package, a dynamic one.
[[ -x /bin/busybox ]] && ! file -L /bin/busybox 2>/dev/null | grep -q dynamically || missing+=(busybox-static)
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) == 0 ]] || sudo=sudo
  logged $sudo apt-get update
  logged $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOGC=400
mkdir -p "$work/bin/cni"

# The kubelet, kube-proxy and kubectl: a module like the plane's, held to startupgate's versions by
# hack/pins.sh, and stamped with the release as the plane is.
pins="$("$root/hack/pins.sh" "$KUBE_VERSION" 2>>"$log")"
mkdir -p "$work/kube"
printf 'module startupgate.local/nodebuild\n\ngo 1.25\n\nrequire k8s.io/kubernetes %s\n\n%s\n' "$KUBE_VERSION" "$pins" >"$work/kube/go.mod"
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
ld=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
(
  cd "$work/kube"
  logged env GOFLAGS="-mod=mod '-gcflags=$PLANE_GCFLAGS'" CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ld" -o "$work/bin/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl
)

# containerd: its own module, without the storage drivers that need cgo (overlayfs is all
# a node here uses).
mkdir -p "$work/containerd"
(
  cd "$work/containerd"
  printf 'module startupgate.local/containerdbuild\n\ngo 1.25\n\nrequire github.com/containerd/containerd/v2 %s\n' "$CONTAINERD_VERSION" >go.mod
  logged env GOFLAGS="-mod=mod '-gcflags=$PLANE_GCFLAGS'" CGO_ENABLED=0 go build -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" -o "$work/bin/" \
    github.com/containerd/containerd/v2/cmd/containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr
)

# runc: cgo, for its nsexec and seccomp.
mkdir -p "$work/runc"
(
  cd "$work/runc"
  printf 'module startupgate.local/runcbuild\n\ngo 1.25\n\nrequire github.com/opencontainers/runc %s\n' "$RUNC_VERSION" >go.mod
  logged env GOFLAGS="-mod=mod '-gcflags=$PLANE_GCFLAGS'" CGO_ENABLED=1 go build -trimpath -tags seccomp -ldflags "-s -w -X main.version=${RUNC_VERSION#v}" -o "$work/bin/runc" github.com/opencontainers/runc
)

# The CNI plugins a node's bridge network needs.
mkdir -p "$work/cni"
(
  cd "$work/cni"
  printf 'module startupgate.local/cnibuild\n\ngo 1.25\n\nrequire github.com/containernetworking/plugins %s\n' "$CNI_PLUGINS_VERSION" >go.mod
  logged env GOFLAGS="-mod=mod '-gcflags=$PLANE_GCFLAGS'" CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/bin/cni/" \
    github.com/containernetworking/plugins/plugins/main/bridge \
    github.com/containernetworking/plugins/plugins/ipam/host-local \
    github.com/containernetworking/plugins/plugins/main/loopback
)

cp /bin/busybox "$work/bin/busybox"
rm -rf "${DIR:?}/cni"
mv "$work/bin/"* "$DIR/"
echo "$KEY" >"$DIR/.version"
echo "node parts ready in $DIR" >&2
