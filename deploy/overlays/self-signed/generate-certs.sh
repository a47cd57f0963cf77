#!/usr/bin/env bash
# Generate a self-signed CA and a serving certificate for the startupgate webhook Service,
# store them in a TLS Secret, and patch the caBundle of the webhook configurations.
#
# Usage: generate-certs.sh [--namespace NS] [--service SVC] [--secret NAME] [--webhook NAME]
#                          [--pod-guard-webhook NAME] [--days N] [--out-dir DIR]
#
# Idempotent: re-running issues a new CA + certificate, updates the Secret in place and
# re-patches the caBundle. The gate reloads the certificate from the mounted Secret.
set -euo pipefail

NAMESPACE="startupgate-system"
SERVICE="startupgate-webhook"
SECRET="startupgate-webhook-tls"
WEBHOOK="startupgate"
POD_GUARD_WEBHOOK="startupgate-pod-guard"
DAYS="3650"
OUT_DIR=""
KUBECTL="${KUBECTL:-kubectl}"

usage() {
  cat <<USAGE
Usage: $0 [options]
  --namespace NS             namespace of the webhook Service and Secret (default: ${NAMESPACE})
  --service SVC              webhook Service name (default: ${SERVICE})
  --secret NAME              TLS Secret to create/update (default: ${SECRET})
  --webhook NAME             MutatingWebhookConfiguration to patch (default: ${WEBHOOK})
  --pod-guard-webhook NAME   ValidatingWebhookConfiguration to patch if present (default: ${POD_GUARD_WEBHOOK})
  --days N                   certificate validity in days (default: ${DAYS})
  --out-dir DIR              keep the generated files in DIR (default: a temporary directory, removed on exit)
  -h, --help                 show this help
Environment: KUBECTL (default: kubectl)
USAGE
}

need_value() {
  if [[ $# -lt 2 || -z "$2" ]]; then
    echo "error: $1 needs a value" >&2
    usage >&2
    exit 2
  fi
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --namespace) need_value "$@"; NAMESPACE="$2"; shift 2 ;;
    --namespace=*) NAMESPACE="${1#*=}"; shift ;;
    --service) need_value "$@"; SERVICE="$2"; shift 2 ;;
    --service=*) SERVICE="${1#*=}"; shift ;;
    --secret) need_value "$@"; SECRET="$2"; shift 2 ;;
    --secret=*) SECRET="${1#*=}"; shift ;;
    --webhook) need_value "$@"; WEBHOOK="$2"; shift 2 ;;
    --webhook=*) WEBHOOK="${1#*=}"; shift ;;
    --pod-guard-webhook) need_value "$@"; POD_GUARD_WEBHOOK="$2"; shift 2 ;;
    --pod-guard-webhook=*) POD_GUARD_WEBHOOK="${1#*=}"; shift ;;
    --days) need_value "$@"; DAYS="$2"; shift 2 ;;
    --days=*) DAYS="${1#*=}"; shift ;;
    --out-dir) need_value "$@"; OUT_DIR="$2"; shift 2 ;;
    --out-dir=*) OUT_DIR="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

for tool in openssl "${KUBECTL}"; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "error: ${tool} not found in PATH" >&2
    exit 1
  fi
done

if [[ -n "${OUT_DIR}" ]]; then
  mkdir -p "${OUT_DIR}"
  WORKDIR="${OUT_DIR}"
else
  WORKDIR="$(mktemp -d)"
  trap 'rm -rf "${WORKDIR}"' EXIT
fi

FQDN="${SERVICE}.${NAMESPACE}.svc"
echo "==> generating CA and serving certificate for ${FQDN} in ${WORKDIR}"

cat >"${WORKDIR}/csr.conf" <<CONF
[req]
prompt = no
distinguished_name = dn
req_extensions = v3_req

[dn]
CN = ${FQDN}

[v3_req]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = @alt_names

[alt_names]
DNS.1 = ${SERVICE}
DNS.2 = ${SERVICE}.${NAMESPACE}
DNS.3 = ${FQDN}
DNS.4 = ${FQDN}.cluster.local
CONF

# CA
openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 \
  -keyout "${WORKDIR}/ca.key" -out "${WORKDIR}/ca.crt" \
  -days "${DAYS}" -subj "/CN=${SERVICE}-ca" 2>/dev/null

# Serving key + CSR, signed by the CA with the SANs above.
openssl req -new -nodes -newkey rsa:2048 -sha256 \
  -keyout "${WORKDIR}/tls.key" -out "${WORKDIR}/tls.csr" \
  -config "${WORKDIR}/csr.conf" 2>/dev/null
openssl x509 -req -sha256 -in "${WORKDIR}/tls.csr" \
  -CA "${WORKDIR}/ca.crt" -CAkey "${WORKDIR}/ca.key" -CAcreateserial \
  -out "${WORKDIR}/tls.crt" -days "${DAYS}" \
  -extensions v3_req -extfile "${WORKDIR}/csr.conf" 2>/dev/null

openssl verify -CAfile "${WORKDIR}/ca.crt" "${WORKDIR}/tls.crt" >/dev/null

echo "==> creating/updating Secret ${NAMESPACE}/${SECRET}"
if ! "${KUBECTL}" get namespace "${NAMESPACE}" >/dev/null 2>&1; then
  "${KUBECTL}" create namespace "${NAMESPACE}"
fi
"${KUBECTL}" -n "${NAMESPACE}" create secret generic "${SECRET}" \
  --type=kubernetes.io/tls \
  --from-file=tls.crt="${WORKDIR}/tls.crt" \
  --from-file=tls.key="${WORKDIR}/tls.key" \
  --from-file=ca.crt="${WORKDIR}/ca.crt" \
  --dry-run=client -o yaml | "${KUBECTL}" apply -f -

CA_BUNDLE="$(openssl base64 -A <"${WORKDIR}/ca.crt")"

# patch_ca_bundle KIND NAME: set clientConfig.caBundle on every webhook of the configuration.
patch_ca_bundle() {
  local kind="$1" name="$2" count i patch
  count="$("${KUBECTL}" get "${kind}" "${name}" -o jsonpath='{range .webhooks[*]}x{end}')"
  count="${#count}"
  if [[ "${count}" -eq 0 ]]; then
    echo "warning: ${kind} ${name} has no webhooks; nothing to patch" >&2
    return 0
  fi
  patch="["
  for ((i = 0; i < count; i++)); do
    [[ "${i}" -gt 0 ]] && patch+=","
    patch+="{\"op\":\"add\",\"path\":\"/webhooks/${i}/clientConfig/caBundle\",\"value\":\"${CA_BUNDLE}\"}"
  done
  patch+="]"
  "${KUBECTL}" patch "${kind}" "${name}" --type=json -p "${patch}"
}

echo "==> patching caBundle of MutatingWebhookConfiguration ${WEBHOOK}"
if "${KUBECTL}" get mutatingwebhookconfiguration "${WEBHOOK}" >/dev/null 2>&1; then
  patch_ca_bundle mutatingwebhookconfiguration "${WEBHOOK}"
else
  echo "warning: MutatingWebhookConfiguration ${WEBHOOK} not found; apply the manifests first and re-run" >&2
fi

if "${KUBECTL}" get validatingwebhookconfiguration "${POD_GUARD_WEBHOOK}" >/dev/null 2>&1; then
  echo "==> patching caBundle of ValidatingWebhookConfiguration ${POD_GUARD_WEBHOOK}"
  patch_ca_bundle validatingwebhookconfiguration "${POD_GUARD_WEBHOOK}"
fi

echo "==> done. CA certificate: ${WORKDIR}/ca.crt$([[ -z "${OUT_DIR}" ]] && echo ' (temporary)')"
