#!/usr/bin/env bash
# Starts a test Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager) bound to
# 127.0.0.1 only, with certificates and ServiceAccount keys made here with openssl.
#
#   e2e/control-plane/start.sh <state-dir>
#
# Writes into <state-dir>:
#   admin.kubeconfig   cluster-admin (O=system:masters) client certificate
#   env                KEY=value lines (values shell-quoted with %q; plain for ordinary paths):
#                      KUBECONFIG, KUBECTL, FFOP_KCP_SERVER, FFOP_KCP_CA_FILE, ..., pids
#   pki/ (ca.key is kept so a harness can sign more client certificates, e.g. for a node agent),
#   logs/, etcd-data/, pids/
# Returns once the API server's /readyz and the controller-manager's /healthz answer ok.
# A state dir that was stopped can be started again: its certificates, ports and etcd data are reused.
#
# Env:
#   FFOP_KCP_MIN_REQUEST_TIMEOUT  kube-apiserver --min-request-timeout in seconds (default 1800);
#                                 watches end after a random time between this and twice this
#   FFOP_KCP_ETCD_PORT, FFOP_KCP_ETCD_PEER_PORT, FFOP_KCP_APISERVER_PORT, FFOP_KCP_KCM_PORT
#                                 fixed ports (default: free ports picked at random)
#   FFOP_KCP_START_TIMEOUT        seconds to wait for readiness (default 180)
#   FFOP_KCP_OWNER_PID            if set, everything is stopped when this process exits
#   FFOP_K8S_BIN_DIR, FFOP_ETCD_BIN_DIR
#                                 use these binaries instead of running build.sh
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -eq 1 ]] || { echo "usage: $0 <state-dir>" >&2; exit 2; }
mkdir -p "$1"
STATE="$(cd "$1" && pwd)"
PKI="$STATE/pki"
LOGS="$STATE/logs"
PIDS="$STATE/pids"
HOST=127.0.0.1
SERVICE_CIDR=10.0.0.0/24
# In-cluster name of the API server; tokens carry it as issuer and audience.
SA_ISSUER="https://kubernetes.default.svc.cluster.local"

log() { echo "start.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# Binaries: from the env, or from build.sh (instant when cached).
if [[ -z "${FFOP_K8S_BIN_DIR:-}" || -z "${FFOP_ETCD_BIN_DIR:-}" ]]; then
  build_out="$("$HERE/build.sh")"
  FFOP_K8S_BIN_DIR="${FFOP_K8S_BIN_DIR:-$(sed -n 's/^FFOP_K8S_BIN_DIR=//p' <<<"$build_out")}"
  FFOP_ETCD_BIN_DIR="${FFOP_ETCD_BIN_DIR:-$(sed -n 's/^FFOP_ETCD_BIN_DIR=//p' <<<"$build_out")}"
fi
ETCD="$FFOP_ETCD_BIN_DIR/etcd"
APISERVER="$FFOP_K8S_BIN_DIR/kube-apiserver"
KCM="$FFOP_K8S_BIN_DIR/kube-controller-manager"
KUBECTL="$FFOP_K8S_BIN_DIR/kubectl"
for b in "$ETCD" "$APISERVER" "$KCM" "$KUBECTL"; do [[ -x "$b" ]] || die "missing binary $b"; done
command -v openssl >/dev/null || die "openssl is not installed"

# Refuse to start twice on one state dir: the second etcd would fight the first over the data dir.
for f in "$PIDS"/*.pid; do
  [[ -e "$f" ]] || continue
  pid="$(cat "$f")"
  if [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$STATE/"; then
    die "$(basename "$f" .pid) is already running for $STATE (pid $pid); run stop.sh first"
  fi
  rm -f "$f"
done

umask 077
mkdir -p "$PKI" "$LOGS" "$PIDS" "$STATE/etcd-data" "$STATE/kcm-certs"

# ---------- ports ----------

# True if something listens on TCP port $1 (any address, IPv4 or IPv6).
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

# Ports are kept in the state dir so a restarted cluster keeps its URLs (and etcd its peer URL). Picked
# after the certificates are made, just before etcd starts, so another process has little time to
# take one meanwhile (the controller manager, which binds last, starts again if that happens).
pick_ports() {
  if [[ -f "$STATE/ports" ]]; then
    # shellcheck disable=SC1091
    source "$STATE/ports"
  fi
  ETCD_PORT="${FFOP_KCP_ETCD_PORT:-${ETCD_PORT:-}}"
  ETCD_PEER_PORT="${FFOP_KCP_ETCD_PEER_PORT:-${ETCD_PEER_PORT:-}}"
  APISERVER_PORT="${FFOP_KCP_APISERVER_PORT:-${APISERVER_PORT:-}}"
  KCM_PORT="${FFOP_KCP_KCM_PORT:-${KCM_PORT:-}}"
  local name
  for name in ETCD_PORT ETCD_PEER_PORT APISERVER_PORT KCM_PORT; do
    # free_port runs in a subshell: what it chose is noted here, so no two of these are the same.
    [[ -n "${!name}" ]] || printf -v "$name" '%s' "$(free_port)"
    CHOSEN_PORTS+="${!name} "
    port_in_use "${!name}" && die "port ${!name} ($name) is already in use"
  done
  printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\nAPISERVER_PORT=%s\nKCM_PORT=%s\n' \
    "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$KCM_PORT" >"$STATE/ports"
}

# ---------- certificates ----------

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# make_ca <name> <common name>: a self-signed CA in pki/<name>.key and .crt.
make_ca() {
  local name="$1" cn="$2"
  [[ -f "$PKI/$name.crt" && -f "$PKI/$name.key" ]] && return 0
  new_key "$PKI/$name.key"
  printf '%s\n' "basicConstraints = critical, CA:TRUE" \
    "keyUsage = critical, keyCertSign, cRLSign, digitalSignature" \
    "subjectKeyIdentifier = hash" >"$PKI/$name.ext"
  openssl req -new -key "$PKI/$name.key" -subj "/CN=$cn" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -signkey "$PKI/$name.key" -days 3650 -sha256 \
    -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

# sign_cert <ca> <name> <subject> <extendedKeyUsage> [subjectAltName]: pki/<name>.key and .crt.
sign_cert() {
  local ca="$1" name="$2" subject="$3" eku="$4" san="${5:-}"
  [[ -f "$PKI/$name.crt" && -f "$PKI/$name.key" ]] && return 0
  new_key "$PKI/$name.key"
  {
    echo "basicConstraints = critical, CA:FALSE"
    echo "keyUsage = critical, digitalSignature"
    echo "extendedKeyUsage = $eku"
    if [[ -n "$san" ]]; then echo "subjectAltName = $san"; fi
  } >"$PKI/$name.ext"
  openssl req -new -key "$PKI/$name.key" -subj "$subject" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

make_pki() {
  make_ca ca ffmpeg-operator-test-ca
  local local_names="DNS:localhost, IP:127.0.0.1"
  sign_cert ca apiserver "/CN=kube-apiserver" serverAuth \
    "$local_names, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local, IP:10.0.0.1"
  sign_cert ca admin "/O=system:masters/CN=ffop-admin" clientAuth
  sign_cert ca controller-manager "/CN=system:kube-controller-manager" clientAuth
  sign_cert ca controller-manager-serving "/CN=kube-controller-manager" serverAuth "$local_names"
  # etcd trusts its own CA only: certificates that the cluster CA issues (admin, or ones the
  # controller-manager signs for approved CSRs) must not open the store behind the API server.
  make_ca etcd-ca ffmpeg-operator-test-etcd-ca
  # etcd's one certificate serves clients and its (single-member) peer port, which needs both usages.
  sign_cert etcd-ca etcd "/CN=etcd" "serverAuth, clientAuth" "$local_names"
  sign_cert etcd-ca apiserver-etcd-client "/CN=kube-apiserver-etcd-client" clientAuth
  # The aggregation layer's request-header identity has its own CA, so that no ordinary client
  # certificate can claim to be the front proxy. Without it the controller-manager's delegated
  # authentication keeps logging that the requestheader CA bundle is missing.
  make_ca front-proxy-ca ffmpeg-operator-test-front-proxy-ca
  sign_cert front-proxy-ca front-proxy-client "/CN=front-proxy-client" clientAuth
  if [[ ! -f "$PKI/sa.key" || ! -f "$PKI/sa.pub" ]]; then
    new_key "$PKI/sa.key"
    openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  fi
}

write_kubeconfig() {
  local file="$1" user="$2" cert="$3" key="$4"
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ffop-test
  cluster:
    server: https://$HOST:$APISERVER_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $user
  user:
    client-certificate: $cert
    client-key: $key
contexts:
- name: ffop-test
  context:
    cluster: ffop-test
    user: $user
    namespace: default
current-context: ffop-test
EOF
}

# ---------- processes ----------

STARTED=()
# launch <name> <binary> <args...>: runs detached from our stdio, pid in pids/<name>.pid.
launch() {
  local name="$1"; shift
  nohup "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  echo $! >"$PIDS/$name.pid"
  STARTED+=("$name")
}

fail_start() {
  local name
  log "$1"
  for name in "${STARTED[@]}"; do
    log "---- last lines of $LOGS/$name.log ----"
    tail -n 20 "$LOGS/$name.log" >&2 || true
  done
  "$HERE/stop.sh" "$STATE" >&2 || true
  exit 1
}
trap 'fail_start "start.sh failed at line $LINENO"' ERR

all_alive() {
  local name
  for name in "${STARTED[@]}"; do
    kill -0 "$(cat "$PIDS/$name.pid")" 2>/dev/null || fail_start "$name exited early"
  done
}

# wait_for <what> <command...>: polls until the command prints "ok".
wait_for() {
  local what="$1"; shift
  local deadline=$((SECONDS + ${FFOP_KCP_START_TIMEOUT:-180}))
  until [[ "$("$@" 2>/dev/null || true)" == "ok" ]]; do
    all_alive
    ((SECONDS < deadline)) || fail_start "timed out waiting for $what"
    sleep 0.2
  done
}

begin=$SECONDS
make_pki
pick_ports
write_kubeconfig "$STATE/admin.kubeconfig" ffop-admin "$PKI/admin.crt" "$PKI/admin.key"
write_kubeconfig "$STATE/controller-manager.kubeconfig" system:kube-controller-manager \
  "$PKI/controller-manager.crt" "$PKI/controller-manager.key"

launch etcd "$ETCD" \
  --name=ffop-etcd \
  --data-dir="$STATE/etcd-data" \
  --listen-client-urls="https://$HOST:$ETCD_PORT" \
  --advertise-client-urls="https://$HOST:$ETCD_PORT" \
  --listen-peer-urls="https://$HOST:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls="https://$HOST:$ETCD_PEER_PORT" \
  --initial-cluster="ffop-etcd=https://$HOST:$ETCD_PEER_PORT" \
  --initial-cluster-state=new \
  --cert-file="$PKI/etcd.crt" --key-file="$PKI/etcd.key" \
  --trusted-ca-file="$PKI/etcd-ca.crt" --client-cert-auth \
  --peer-cert-file="$PKI/etcd.crt" --peer-key-file="$PKI/etcd.key" \
  --peer-trusted-ca-file="$PKI/etcd-ca.crt" --peer-client-cert-auth \
  --unsafe-no-fsync \
  --log-level=warn

# No kubelets and a loopback advertise address: the endpoint reconciler would only log errors,
# as a "kubernetes" Service cannot point at 127.0.0.1.
launch kube-apiserver "$APISERVER" \
  --bind-address="$HOST" \
  --advertise-address="$HOST" \
  --secure-port="$APISERVER_PORT" \
  --cert-dir="$STATE/apiserver-certs" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$PKI/front-proxy-client.crt" \
  --proxy-client-key-file="$PKI/front-proxy-client.key" \
  --etcd-servers="https://$HOST:$ETCD_PORT" \
  --etcd-cafile="$PKI/etcd-ca.crt" \
  --etcd-certfile="$PKI/apiserver-etcd-client.crt" --etcd-keyfile="$PKI/apiserver-etcd-client.key" \
  --authorization-mode=Node,RBAC \
  --service-account-issuer="$SA_ISSUER" \
  --service-account-key-file="$PKI/sa.pub" \
  --service-account-signing-key-file="$PKI/sa.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --endpoint-reconciler-type=none \
  --min-request-timeout="${FFOP_KCP_MIN_REQUEST_TIMEOUT:-1800}" \
  --profiling=false

write_env() {
  {
    printf '%s=%q\n' \
      KUBECONFIG "$STATE/admin.kubeconfig" \
      KUBECTL "$KUBECTL" \
      FFOP_KCP_SERVER "https://$HOST:$APISERVER_PORT" \
      FFOP_KCP_CA_FILE "$PKI/ca.crt" \
      FFOP_KCP_CA_KEY_FILE "$PKI/ca.key" \
      FFOP_KCP_SA_ISSUER "$SA_ISSUER" \
      FFOP_KCP_ETCD_URL "https://$HOST:$ETCD_PORT" \
      FFOP_KCP_KCM_URL "https://$HOST:$KCM_PORT" \
      FFOP_KCP_LOG_DIR "$LOGS"
    local name var
    for name in "${STARTED[@]}"; do
      var="FFOP_KCP_$(tr 'a-z-' 'A-Z_' <<<"$name")_PID"
      printf '%s=%q\n' "$var" "$(cat "$PIDS/$name.pid")"
    done
  } >"$STATE/env.partial"
  mv "$STATE/env.partial" "$STATE/env"
}

# The env file exists from here on, so a caller can stop.sh even if the rest fails.
write_env
wait_for "kube-apiserver /readyz" "$KUBECTL" --kubeconfig="$STATE/admin.kubeconfig" get --raw /readyz

launch_kcm() {
  launch kube-controller-manager "$KCM" \
    --bind-address="$HOST" \
    --secure-port="$KCM_PORT" \
    --cert-dir="$STATE/kcm-certs" \
    --tls-cert-file="$PKI/controller-manager-serving.crt" \
    --tls-private-key-file="$PKI/controller-manager-serving.key" \
    --kubeconfig="$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
    --controllers='*' \
    --use-service-account-credentials=true \
    --root-ca-file="$PKI/ca.crt" \
    --service-account-private-key-file="$PKI/sa.key" \
    --cluster-signing-cert-file="$PKI/ca.crt" \
    --cluster-signing-key-file="$PKI/ca.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --leader-elect=false \
    --profiling=false
  write_env
}

# The controller manager binds its port last, seconds after the ports were picked: another process
# (another test's control plane picking at the same moment) may have taken it since. Then it starts
# again on a new free port, up to 5 times, instead of failing the whole start.
launch_kcm
for ((kcm_starts = 1; ; kcm_starts++)); do
  kcm_pid="$(cat "$PIDS/kube-controller-manager.pid")"
  kcm_deadline=$((SECONDS + ${FFOP_KCP_START_TIMEOUT:-180}))
  until [[ "$("$KUBECTL" --kubeconfig="$STATE/admin.kubeconfig" --server="https://$HOST:$KCM_PORT" get --raw /healthz 2>/dev/null || true)" == "ok" ]]; do
    kill -0 "$kcm_pid" 2>/dev/null || break
    ((SECONDS < kcm_deadline)) || fail_start "timed out waiting for kube-controller-manager /healthz"
    sleep 0.2
  done
  kill -0 "$kcm_pid" 2>/dev/null && break
  if ((kcm_starts < 5)) && grep -q "address already in use" "$LOGS/kube-controller-manager.log"; then
    log "kube-controller-manager: port $KCM_PORT was taken meanwhile; starting it again on another"
    mv "$LOGS/kube-controller-manager.log" "$LOGS/kube-controller-manager.$kcm_starts.log"
    unset 'STARTED[-1]'
    KCM_PORT="$(free_port)"
    CHOSEN_PORTS+="$KCM_PORT "
    printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\nAPISERVER_PORT=%s\nKCM_PORT=%s\n' \
      "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$KCM_PORT" >"$STATE/ports"
    launch_kcm
    continue
  fi
  fail_start "kube-controller-manager exited early"
done
all_alive

if [[ -n "${FFOP_KCP_OWNER_PID:-}" ]]; then
  # Stops the cluster when its owner dies without calling stop.sh (a crashed test run).
  owner="$FFOP_KCP_OWNER_PID"
  # shellcheck disable=SC2016 # single quotes on purpose: the inner bash expands its own $1 $2 $3
  nohup bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec "$2" "$3"' \
    ffop-kcp-watchdog "$owner" "$HERE/stop.sh" "$STATE/" </dev/null >"$LOGS/watchdog.log" 2>&1 &
  echo $! >"$PIDS/watchdog.pid"
fi

trap - ERR
log "control plane ready in $((SECONDS - begin))s: https://$HOST:$APISERVER_PORT (env: $STATE/env)"
