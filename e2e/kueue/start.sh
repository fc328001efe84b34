#!/usr/bin/env bash
# Runs Kueue (built by e2e/kueue/build.sh) against a test control plane that
# e2e/control-plane/start.sh started, everything bound to 127.0.0.1.
#
#   e2e/kueue/start.sh <state-dir> <control-plane-state-dir>
#
# Installs Kueue's CRDs, its namespace (kueue-system) and webhook configurations, writes a Kueue
# Configuration (no leader election; the batch/job integration only; Jobs without a queue-name label
# are left alone), starts the manager as cluster-admin and returns once it is ready: its /readyz
# answers ok and the API server gets answers from its webhooks.
#
# Why the webhooks are registered, and how (Kueue's manager cannot run without its webhook server,
# and with internal cert management on, not without its webhook and conversion configurations):
# - With internalCertManagement off, the manager reads its metrics certificate from the fixed path
#   /etc/kueue/metrics/certs and exits without it. So it stays on, as in Kueue's release manifests.
# - With it on, a cert rotator keeps the Secret kueue-system/kueue-webhook-server-cert and injects
#   its CA into kueue-{mutating,validating}-webhook-configuration and into the conversion webhook of
#   five CRDs (localqueues, clusterqueues, workloads, cohorts, multikueueclusters). The manager is
#   not ready (and does not even start its controllers) until that injection worked, and it fails
#   for a CRD without spec.conversion.webhook.clientConfig. The rotator does not write the serving
#   certificate where the webhook server reads it (a pod mounts the Secret there), and the
#   certificate it would make names only kueue-webhook-service.kueue-system.svc.
# - So this script makes the CA and serving certificate with openssl (the CA as an RSA PKCS#1 key
#   with the name "kueue-ca", the certificate for that Service name and for IP 127.0.0.1, which is
#   what the rotator accepts as valid and keeps), stores them in the Secret and in the manager's
#   cert dir, and points the webhook configurations and CRD conversions at
#   https://127.0.0.1:<webhook port> with that CA.
# Registering the webhooks also gives the tests Kueue's admission checks on Jobs and its own
# objects, as a cluster with Kueue installed from its release has them.
#
# Writes into <state-dir>: env (KEY=value lines: FFOP_KUEUE_PID, FFOP_KUEUE_HEALTH_URL,
# FFOP_KUEUE_METRICS_URL, FFOP_KUEUE_WEBHOOK_URL, FFOP_KUEUE_NAMESPACE, FFOP_KUEUE_LOG, KUBECONFIG,
# KUBECTL), config.yaml, pki/, webhook-certs/, logs/kueue.log, pids/.
# Stop with e2e/kueue/stop.sh <state-dir> (before the control plane's stop.sh).
#
# Env:
#   FFOP_KUEUE_BIN_DIR       use this build instead of running build.sh
#   FFOP_KUEUE_START_TIMEOUT seconds to wait for readiness (default 120)
#   FFOP_KUEUE_OWNER_PID     if set, Kueue is stopped when this process exits
#   FFOP_KUEUE_LOG_LEVEL     the manager's --zap-log-level (default info)
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -eq 2 ]] || { echo "usage: $0 <state-dir> <control-plane-state-dir>" >&2; exit 2; }
[[ -f "$2/env" ]] || { echo "start.sh: $2/env not found: is the control plane started?" >&2; exit 2; }
mkdir -p "$1"
STATE="$(cd "$1" && pwd)"
CP_STATE="$(cd "$2" && pwd)"
PKI="$STATE/pki"
CERT_DIR="$STATE/webhook-certs"
LOGS="$STATE/logs"
PIDS="$STATE/pids"
HOST=127.0.0.1
NAMESPACE=kueue-system
SERVICE_NAME=kueue-webhook-service
SECRET_NAME=kueue-webhook-server-cert
FIELD_MANAGER=ffop-kueue-e2e
# The CRDs whose conversion webhook the cert rotator injects its CA into (pkg/util/cert in Kueue).
CONVERSION_CRDS=(localqueues clusterqueues workloads cohorts multikueueclusters)

log() { echo "kueue/start.sh: $*" >&2; }
die() { log "$*"; exit 1; }

if [[ -z "${FFOP_KUEUE_BIN_DIR:-}" ]]; then
  FFOP_KUEUE_BIN_DIR="$(sed -n 's/^FFOP_KUEUE_BIN_DIR=//p' <<<"$("$HERE/build.sh")")"
fi
KUEUE="$FFOP_KUEUE_BIN_DIR/kueue"
MANIFESTS="$FFOP_KUEUE_BIN_DIR/manifests"
[[ -x "$KUEUE" ]] || die "missing binary $KUEUE"
[[ -f "$MANIFESTS/webhook/manifests.yaml" ]] || die "missing $MANIFESTS/webhook/manifests.yaml"
command -v openssl >/dev/null || die "openssl is not installed"
command -v curl >/dev/null || die "curl is not installed"

# KUBECONFIG and KUBECTL of the control plane.
KUBECONFIG="$(sed -n 's/^KUBECONFIG=//p' "$CP_STATE/env")"
KUBECTL="$(sed -n 's/^KUBECTL=//p' "$CP_STATE/env")"
[[ -f "$KUBECONFIG" && -x "$KUBECTL" ]] || die "no KUBECONFIG or KUBECTL in $CP_STATE/env"
kubectl() { "$KUBECTL" --kubeconfig="$KUBECONFIG" --request-timeout=30s "$@"; }

for f in "$PIDS"/*.pid; do
  [[ -e "$f" ]] || continue
  pid="$(cat "$f")"
  if [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$STATE/"; then
    die "$(basename "$f" .pid) is already running for $STATE (pid $pid); run stop.sh first"
  fi
  rm -f "$f"
done

umask 077
mkdir -p "$PKI" "$CERT_DIR" "$LOGS" "$PIDS" "$STATE/tmp"

# ---------- ports ----------

port_in_use() {
  local hex
  hex="$(printf ':%04X' "$1")"
  awk -v p="$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

CHOSEN_PORTS=" "
free_port() {
  local p tries=0
  while ((tries++ < 200)); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    [[ "$CHOSEN_PORTS" == *" $p "* ]] && continue
    port_in_use "$p" && continue
    CHOSEN_PORTS+="$p "
    echo "$p"
    return 0
  done
  die "found no free port"
}

# Kept in the state dir, so that a restart keeps the URLs the webhook configurations point at.
if [[ -f "$STATE/ports" ]]; then
  # shellcheck disable=SC1091
  source "$STATE/ports"
fi
for name in WEBHOOK_PORT METRICS_PORT HEALTH_PORT; do
  if [[ -z "${!name:-}" ]]; then
    printf -v "$name" '%s' "$(free_port)"
  else
    CHOSEN_PORTS+="${!name} "
  fi
  port_in_use "${!name}" && die "port ${!name} ($name) is already in use"
done
printf 'WEBHOOK_PORT=%s\nMETRICS_PORT=%s\nHEALTH_PORT=%s\n' "$WEBHOOK_PORT" "$METRICS_PORT" "$HEALTH_PORT" >"$STATE/ports"
WEBHOOK_URL="https://$HOST:$WEBHOOK_PORT"

# ---------- certificates ----------

make_pki() {
  [[ -f "$PKI/ca.crt" && -f "$PKI/ca.key" && -f "$PKI/tls.crt" && -f "$PKI/tls.key" ]] && return 0
  # The rotator reads the CA key as PKCS#1 RSA and checks the CA certificate for the name kueue-ca.
  openssl genrsa -traditional -out "$PKI/ca.key" 2048 2>/dev/null
  printf '%s\n' "basicConstraints = critical, CA:TRUE" \
    "keyUsage = critical, keyCertSign, cRLSign, digitalSignature" \
    "subjectKeyIdentifier = hash" "subjectAltName = DNS:kueue-ca" >"$PKI/ca.ext"
  openssl req -new -key "$PKI/ca.key" -subj "/O=kueue/CN=kueue-ca" -out "$PKI/ca.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/ca.csr" -signkey "$PKI/ca.key" -days 3650 -sha256 \
    -extfile "$PKI/ca.ext" -out "$PKI/ca.crt" 2>/dev/null
  openssl genrsa -traditional -out "$PKI/tls.key" 2048 2>/dev/null
  printf '%s\n' "basicConstraints = critical, CA:FALSE" \
    "keyUsage = critical, digitalSignature, keyEncipherment" "extendedKeyUsage = serverAuth" \
    "subjectAltName = DNS:$SERVICE_NAME.$NAMESPACE.svc, IP:$HOST" >"$PKI/tls.ext"
  openssl req -new -key "$PKI/tls.key" -subj "/CN=$SERVICE_NAME.$NAMESPACE.svc" -out "$PKI/tls.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/tls.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$PKI/tls.ext" -out "$PKI/tls.crt" 2>/dev/null
  rm -f "$PKI"/*.csr "$PKI"/*.ext "$PKI"/*.srl
}

# ---------- processes ----------

fail_start() {
  log "$1"
  if [[ -f "$LOGS/kueue.log" ]]; then
    log "---- last lines of $LOGS/kueue.log ----"
    tail -n 30 "$LOGS/kueue.log" >&2 || true
  fi
  "$HERE/stop.sh" "$STATE" >&2 || true
  exit 1
}
trap 'fail_start "start.sh failed at line $LINENO"' ERR

write_env() {
  {
    printf '%s=%q\n' \
      KUBECONFIG "$KUBECONFIG" \
      KUBECTL "$KUBECTL" \
      FFOP_KUEUE_NAMESPACE "$NAMESPACE" \
      FFOP_KUEUE_WEBHOOK_URL "$WEBHOOK_URL" \
      FFOP_KUEUE_HEALTH_URL "http://$HOST:$HEALTH_PORT" \
      FFOP_KUEUE_METRICS_URL "https://$HOST:$METRICS_PORT/metrics" \
      FFOP_KUEUE_LOG "$LOGS/kueue.log"
    if [[ -f "$PIDS/kueue.pid" ]]; then printf '%s=%q\n' FFOP_KUEUE_PID "$(cat "$PIDS/kueue.pid")"; fi
  } >"$STATE/env.partial"
  mv "$STATE/env.partial" "$STATE/env"
}

# The webhook configurations of the release, with every clientConfig.service turned into a URL on
# 127.0.0.1 plus the CA, named as the rotator expects (kueue-...), and the pod, deployment and
# statefulset webhooks kept out of kube-system and kueue-system as Kueue's kustomize overlay does.
webhook_configurations() {
  local ca_bundle
  ca_bundle="$(base64 -w0 <"$PKI/ca.crt")"
  awk -v url="$WEBHOOK_URL" -v ca="$ca_bundle" '
    /^  name: (mutating|validating)-webhook-configuration$/ { print "  name: kueue-" $2; next }
    /^    service:$/ { in_service = 1; next }
    in_service && /^      (name|namespace):/ { next }
    in_service && /^      path:/ {
      print "    url: " url $2
      print "    caBundle: " ca
      in_service = 0
      next
    }
    { print }
    /^  name: [mv](pod|deployment|statefulset)\.kb\.io$/ {
      print "  namespaceSelector:"
      print "    matchExpressions:"
      print "    - key: kubernetes.io/metadata.name"
      print "      operator: NotIn"
      print "      values: [kube-system, kueue-system]"
    }
  ' "$MANIFESTS/webhook/manifests.yaml"
}

conversion_patch() {
  printf '{"spec":{"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"%s/convert","caBundle":"%s"}}}}}' \
    "$WEBHOOK_URL" "$(base64 -w0 <"$PKI/ca.crt")"
}

write_config() {
  cat >"$STATE/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: $NAMESPACE
health:
  healthProbeBindAddress: $HOST:$HEALTH_PORT
metrics:
  bindAddress: $HOST:$METRICS_PORT
webhook:
  host: $HOST
  port: $WEBHOOK_PORT
  certDir: $CERT_DIR
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: $SERVICE_NAME
  webhookSecretName: $SECRET_NAME
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - batch/job
# The visibility (pending workloads) API server binds 0.0.0.0:8082 and writes its self-signed
# certificate to /visibility; nothing here reads it.
featureGates:
  VisibilityOnDemand: false
clientConnection:
  qps: 50
  burst: 100
EOF
}

# wait_for <what> <command...>: polls until the command succeeds, while the manager runs.
wait_for() {
  local what="$1"; shift
  local deadline=$((SECONDS + ${FFOP_KUEUE_START_TIMEOUT:-120}))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(cat "$PIDS/kueue.pid")" 2>/dev/null || fail_start "kueue exited early"
    ((SECONDS < deadline)) || fail_start "timed out waiting for $what"
    sleep 0.2
  done
}

readyz() { [[ "$(curl -sS --max-time 2 "http://$HOST:$HEALTH_PORT/readyz")" == ok ]]; }

# A server-side dry run of a ResourceFlavor passes Kueue's mutating and validating webhooks.
webhooks_answer() {
  kubectl create --dry-run=server -o name -f - <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: ffop-kueue-webhook-probe
EOF
}

begin=$SECONDS
make_pki
cp "$PKI/tls.crt" "$PKI/tls.key" "$CERT_DIR/"

kubectl apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f "$MANIFESTS/crds/" >/dev/null
for crd in "${CONVERSION_CRDS[@]}"; do
  kubectl patch crd "$crd.kueue.x-k8s.io" --type=merge -p "$(conversion_patch)" >/dev/null
done
kubectl wait --for=condition=Established --timeout=60s -f "$MANIFESTS/crds/" >/dev/null
kubectl create namespace "$NAMESPACE" --dry-run=client -o yaml |
  kubectl apply --server-side --field-manager="$FIELD_MANAGER" -f - >/dev/null
kubectl create secret generic "$SECRET_NAME" --namespace="$NAMESPACE" --dry-run=client -o yaml \
  --from-file=ca.crt="$PKI/ca.crt" --from-file=ca.key="$PKI/ca.key" \
  --from-file=tls.crt="$PKI/tls.crt" --from-file=tls.key="$PKI/tls.key" |
  kubectl apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - >/dev/null
webhook_configurations | kubectl apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - >/dev/null
write_config

nohup env TMPDIR="$STATE/tmp" KUBECONFIG="$KUBECONFIG" "$KUEUE" \
  --config="$STATE/config.yaml" \
  --kubeconfig="$KUBECONFIG" \
  --zap-log-level="${FFOP_KUEUE_LOG_LEVEL:-info}" \
  </dev/null >"$LOGS/kueue.log" 2>&1 &
echo $! >"$PIDS/kueue.pid"
write_env

wait_for "Kueue's /readyz" readyz
wait_for "the API server to reach Kueue's webhooks" webhooks_answer

if [[ -n "${FFOP_KUEUE_OWNER_PID:-}" ]]; then
  # Stops Kueue when its owner dies without calling stop.sh (a crashed test run).
  # shellcheck disable=SC2016 # single quotes on purpose: the inner bash expands its own $1 $2 $3
  nohup bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec "$2" "$3"' \
    ffop-kueue-watchdog "$FFOP_KUEUE_OWNER_PID" "$HERE/stop.sh" "$STATE/" </dev/null >"$LOGS/watchdog.log" 2>&1 &
  echo $! >"$PIDS/watchdog.pid"
fi

trap - ERR
log "Kueue ready in $((SECONDS - begin))s: webhooks at $WEBHOOK_URL (env: $STATE/env)"
