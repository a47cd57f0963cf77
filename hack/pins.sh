#!/usr/bin/env bash
# Usage: hack/pins.sh KUBE_VERSION
#
# Prints go.mod lines that hold a build module of a part we build from source (the control
# plane, Karpenter) to startupgate's module versions: a require for each of ours, and a
# replace of every k8s.io staging module with its release for KUBE_VERSION. Minimal version
# selection then picks the newer of the two for every module both use, so that, built with
# the same compiler flags, the packages they share (client-go, api, apimachinery, std)
# compile once for all of them and for make test's gate.
set -euo pipefail
KUBE_VERSION=$1
root="$(cd "$(dirname "$0")/.." && pwd)"
# k8s.io/kubernetes replaces every k8s.io/<staging> module with ./staging/src/...; a consumer
# must replace each one with its published release (v0.<minor>.<patch>) instead.
kmod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
[[ -n $kmod ]] || { echo "downloading k8s.io/kubernetes $KUBE_VERSION's go.mod failed" >&2; exit 1; }
(cd "$root" && GOFLAGS='' go list -m -f '{{if not .Main}}require {{.Path}} {{.Version}}{{end}}' all) \
  | grep -v '^require k8s.io/kubernetes ' || true
grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging/src/' "$kmod" \
  | awk -v v="v0.${KUBE_VERSION#v1.}" '{ print "replace " $1 " => " $1 " " v }'
