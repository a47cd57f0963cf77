#!/usr/bin/env bash
# startupgate on kind: create a cluster, build the gate's image without Docker (make image)
# and load it, install it as docs/operations.md#install-with-kustomize says (self-signed
# overlay + generate-certs.sh + the example init DaemonSet), then play autoscaled node joins
# and print a timeline per node.
#
# kind cannot add nodes to a running cluster, so a "join" is replayed: the Node object of a
# gated worker is deleted (as after a scale-down), the Pods bound to it are removed (as pod
# GC does for a vanished node), and its container is restarted, so that its kubelet registers
# the Node again with a real CREATE — through the gate's admission webhook, like a new node.
#
# Usage: deploy/kind/demo.sh            (make kind-demo)
# Environment:
#   IMG            image to build and load (default ghcr.io/startupgate/startupgate:dev)
#   IMAGE_TAR      an image tarball from `make image` to load (default: run make image now)
#   CLUSTER        kind cluster name (default startupgate-demo); reused if it exists
#   KIND_IMAGE     kindest/node image (default: kind's own default)
#   KEEP_CLUSTER=0 delete the cluster at the end (default: keep it for exploring)
#   KIND, KUBECTL, DOCKER   the tools (default: from PATH)
set -euo pipefail

IMG="${IMG:-ghcr.io/startupgate/startupgate:dev}"
IMAGE_TAR="${IMAGE_TAR:-}"
CLUSTER="${CLUSTER:-startupgate-demo}"
KIND_IMAGE="${KIND_IMAGE:-}"
KEEP_CLUSTER="${KEEP_CLUSTER:-1}"
KIND="${KIND:-kind}"
KUBECTL="${KUBECTL:-kubectl}"
DOCKER="${DOCKER:-docker}"

NS="startupgate-system"
TAINT_KEY="startup.k8s.io/initializing"
INIT_LABEL="startup.k8s.io/component=init"
# The gate's default node selector, minus the label-selector syntax kubectl would need.
GATED_NODES='!node-role.kubernetes.io/control-plane,kubernetes.azure.com/mode!=system'
TIMEOUT_SECONDS=300

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="$(mktemp -d)"
export KUBECONFIG="${WORK}/kubeconfig"

cleanup() {
  if [[ "${KEEP_CLUSTER}" == "0" ]]; then
    "${KIND}" delete cluster --name "${CLUSTER}" || true
  fi
  rm -rf "${WORK}"
}
trap cleanup EXIT

log() { printf '==> %s\n' "$*"; }

for tool in "${DOCKER}" "${KIND}" "${KUBECTL}" openssl; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "error: ${tool} not found in PATH" >&2
    exit 1
  fi
done
if ! "${DOCKER}" info >/dev/null 2>&1; then
  echo "error: no Docker engine (docker info failed)" >&2
  exit 1
fi

# now prints the current UTC time, RFC 3339.
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# wait_for DESCRIPTION COMMAND...: run COMMAND every second until it prints something
# non-empty; echo that output. Fails after TIMEOUT_SECONDS.
wait_for() {
  local what="$1" out i
  shift
  for ((i = 0; i < TIMEOUT_SECONDS; i++)); do
    out="$("$@" 2>/dev/null || true)"
    if [[ -n "${out}" ]]; then
      echo "${out}"
      return 0
    fi
    sleep 1
  done
  echo "error: timed out after ${TIMEOUT_SECONDS}s waiting for ${what}" >&2
  return 1
}

# 1. Cluster.
if "${KIND}" get clusters 2>/dev/null | grep -qx "${CLUSTER}"; then
  log "reusing kind cluster ${CLUSTER}"
else
  log "creating kind cluster ${CLUSTER} (1 control plane, 1 system worker, 3 gated workers)"
  args=(create cluster --name "${CLUSTER}" --config "${ROOT}/deploy/kind/cluster.yaml" --wait 180s)
  if [[ -n "${KIND_IMAGE}" ]]; then
    args+=(--image "${KIND_IMAGE}")
  fi
  "${KIND}" "${args[@]}"
fi
"${KIND}" get kubeconfig --name "${CLUSTER}" >"${KUBECONFIG}"

# 2. Image: built in Go (hack/image), no docker build; kind imports the tarball into every node.
if [[ -z "${IMAGE_TAR}" ]]; then
  log "building ${IMG} (make image)"
  make -C "${ROOT}" image IMG="${IMG}"
  IMAGE_TAR="${ROOT}/out/startupgate.tar"
fi
log "loading ${IMAGE_TAR} (${IMG}) into ${CLUSTER}"
"${KIND}" load image-archive "${IMAGE_TAR}" --name "${CLUSTER}"

# 3. Install, as docs/operations.md#install-with-kustomize says (the image swapped for the
# one just loaded).
log "applying deploy/overlays/self-signed"
"${KUBECTL}" kustomize "${ROOT}/deploy/overlays/self-signed" |
  sed -e "s#image: ghcr.io/startupgate/startupgate:[^ ]*#image: ${IMG}#" |
  "${KUBECTL}" apply -f -
log "generating the webhook certificate"
KUBECTL="${KUBECTL}" "${ROOT}/deploy/overlays/self-signed/generate-certs.sh"
log "applying deploy/startup-daemonset.yaml"
"${KUBECTL}" apply -f "${ROOT}/deploy/startup-daemonset.yaml"
log "waiting for the gate"
"${KUBECTL}" -n "${NS}" rollout status deploy/startupgate --timeout="${TIMEOUT_SECONDS}s"
"${KUBECTL}" -n "${NS}" get pods -o wide

# 4. Autoscaled joins, replayed on every gated worker at once.
WORKERS=()
while IFS= read -r w; do
  [[ -n "${w}" ]] && WORKERS+=("${w}")
done < <("${KUBECTL}" get nodes -l "${GATED_NODES}" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
if [[ "${#WORKERS[@]}" -eq 0 ]]; then
  echo "error: no gated worker nodes found" >&2
  exit 1
fi
LEFT=()
for w in "${WORKERS[@]}"; do
  log "node ${w}: delete the Node, remove its Pods, restart its kubelet"
  LEFT+=("$(now)")
  "${KUBECTL}" delete node "${w}" --wait=true
  "${KUBECTL}" delete pods --all-namespaces --field-selector "spec.nodeName=${w}" --force --grace-period=0 >/dev/null 2>&1 || true
  "${DOCKER}" restart "${w}" >/dev/null
done

# 5. Timeline per node, read back from the API with jsonpath.
node_created() { "${KUBECTL}" get node "$1" -o jsonpath='{.metadata.creationTimestamp}'; }
node_taint() { "${KUBECTL}" get node "$1" -o jsonpath="{.spec.taints[?(@.key==\"${TAINT_KEY}\")].effect}"; }
ready_init_pod() {
  "${KUBECTL}" -n "${NS}" get pods -l "${INIT_LABEL}" --field-selector "spec.nodeName=$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{" "}{.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\n"}{end}' |
    awk '$2 == "True" {print $1, $3; exit}'
}
completed_at() { "${KUBECTL}" get node "$1" -o jsonpath='{.metadata.annotations.startup\.k8s\.io/completedAt}'; }
released() {
  if [[ -n "$(completed_at "$1")" && -z "$(node_taint "$1")" ]]; then echo released; fi
}
unix_to_utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$1" +%Y-%m-%dT%H:%M:%SZ; }

# Pass 1, while the init Pods are still warming up (20s): each Node's taint right after it
# registered. The webhook adds it inside the CREATE, so the first stored version has it.
CREATED=()
TAINTED=()
for w in "${WORKERS[@]}"; do
  created="$(wait_for "node ${w} to register again" node_created "${w}")"
  CREATED+=("${created}")
  TAINTED+=("$(node_taint "${w}")")
done
# Pass 2: init Pod Ready, then released.
for i in "${!WORKERS[@]}"; do
  w="${WORKERS[${i}]}"
  pod="$(wait_for "the init Pod on ${w} to be Ready" ready_init_pod "${w}")"
  read -r pod_name pod_ready <<<"${pod}"
  wait_for "the gate to release ${w}" released "${w}" >/dev/null
  completed="$(completed_at "${w}")"
  echo
  echo "node ${w}"
  printf '  %-28s %s\n' "deleted, kubelet restarted" "${LEFT[${i}]}"
  printf '  %-28s %s  taint %s:%s\n' "registered again" "${CREATED[${i}]}" "${TAINT_KEY}" "${TAINTED[${i}]:-MISSING}"
  printf '  %-28s %s  %s\n' "init Pod Ready" "${pod_ready}" "${pod_name}"
  printf '  %-28s %s  completedAt=%s\n' "released (taint removed)" "$(unix_to_utc "${completed}")" "${completed}"
done

echo
"${KUBECTL}" get nodes -o custom-columns='NAME:.metadata.name,TAINTS:.spec.taints[*].key,COMPLETED:.metadata.annotations.startup\.k8s\.io/completedAt'
echo
"${KUBECTL}" get events -A --field-selector reason=StartupGateReleased
if [[ "${KEEP_CLUSTER}" != "0" ]]; then
  log "cluster ${CLUSTER} kept (KUBECONFIG: kind get kubeconfig --name ${CLUSTER}); remove it: kind delete cluster --name ${CLUSTER}"
fi
