#!/usr/bin/env bash
# Starts a real Kubernetes node against a running test control plane: containerd (Debian's, with
# runc and the CNI bridge plugin) and kubelet built by e2e/control-plane/build.sh; the first node also
# runs the cluster's kube-scheduler. Run it inside e2e/node/sandbox.sh.
#
#   e2e/node/start.sh [--index N] <node-state-dir> <control-plane-state-dir> [image-archive...]
#
# Several nodes share the sandbox, each with its own containerd, kubelet, cgroup root, pod bridge and
# address on the sandbox's node bridge. Node 1 (the default) is named localhost, has the address
# $FFOP_NODE_IP (10.213.0.1), pods in 10.214.0.0/24 on bridge ffop-cni0, and starts kube-scheduler.
# Node N > 1 is named node-N, has the address 10.213.0.N, pods in 10.214.(N-1).0/24 on bridge
# ffop-cni(N-1). Pods of every node reach every node's address and each other through their gateway.
#
# The image archives (docker-archive tars, e.g. from scripts/build-images.sh) are imported into
# containerd's k8s.io namespace before the node registers, so pods run them with imagePullPolicy
# Never or IfNotPresent. Writes <node-state-dir>/env (CONTAINERD_ADDRESS, FFOP_NODE_NAME, ...) and
# returns once the node is Ready.
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INDEX=1
if [[ "${1:-}" == --index ]]; then
  INDEX="${2:-}"
  shift 2 || true
fi
[[ "$INDEX" =~ ^[1-9][0-9]?$ && "$INDEX" -le 50 ]] || { echo "start.sh: --index takes a number from 1 to 50" >&2; exit 2; }
[[ $# -ge 2 ]] || { echo "usage: $0 [--index N] <node-state-dir> <control-plane-state-dir> [image-archive...]" >&2; exit 2; }
[[ "${FFOP_NODE_SANDBOX:-}" == 1 ]] || { echo "start.sh: run inside e2e/node/sandbox.sh" >&2; exit 1; }
mkdir -p "$1"
STATE="$(cd "$1" && pwd)"
CP_STATE="$(cd "$2" && pwd)"
shift 2
if ((INDEX == 1)); then
  NODE_IP="$FFOP_NODE_IP"
  NODE_NAME=localhost # --node-ip cannot be a loopback address, the name can be anything
  # The API server reaches a kubelet at its node's name (the Hostname address), here 127.0.0.1.
  KUBELET_ADDRESS=127.0.0.1
else
  NODE_IP="${FFOP_NODE_IP%.*}.$INDEX"
  NODE_NAME="node-$INDEX"
  KUBELET_ADDRESS="$NODE_IP" # the sandbox's /etc/hosts gets "$NODE_IP $NODE_NAME" below
fi
POD_CIDR="10.214.$((INDEX - 1)).0/24"
POD_BRIDGE="ffop-cni$((INDEX - 1))"
# The node's cgroups, under every controller; sandbox.sh removes them when it ends.
CGROUP_ROOT="/ffop-node-$$"
LOGS="$STATE/logs"
PIDS="$STATE/pids"
mkdir -p "$LOGS" "$PIDS" "$STATE/pki" "$STATE/cni/net.d" "$STATE/cni/ipam" "$STATE/pod-logs"

log() { echo "node/start.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck disable=SC1091
source "$CP_STATE/env"
build_out="$("$HERE/../control-plane/build.sh")"
BIN="$(sed -n 's/^FFOP_K8S_BIN_DIR=//p' <<<"$build_out")"
for b in kubelet kube-scheduler; do [[ -x "$BIN/$b" ]] || die "missing $BIN/$b"; done
for b in containerd runc ctr; do command -v "$b" >/dev/null || die "$b is not installed (FFOP_NEED_NODE=1 scripts/ensure-system-deps.sh)"; done
[[ -x /usr/lib/cni/bridge ]] || die "the CNI plugins are not installed (containernetworking-plugins)"

launch() {
  local name="$1"; shift
  nohup "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  echo $! >"$PIDS/$name.pid"
}
alive() { kill -0 "$(cat "$PIDS/$1.pid")" 2>/dev/null || { tail -n 30 "$LOGS/$1.log" >&2; die "$1 exited"; }; }

# ---------- the node's address ----------
# Every node's address is on the sandbox's bridge ffop-node; the sandbox's own /etc/hosts (a copy
# sandbox.sh lays over the machine's) names the nodes, so that the API server finds each kubelet.
if ((INDEX > 1)); then
  findmnt -n --mountpoint /etc/hosts >/dev/null || die "/etc/hosts is not the sandbox's own copy (sandbox.sh makes it)"
  ip -4 -o addr show dev ffop-node | grep -qF " $NODE_IP/" || ip addr add "$NODE_IP/24" dev ffop-node
  grep -qxF "$NODE_IP $NODE_NAME" /etc/hosts || echo "$NODE_IP $NODE_NAME" >>/etc/hosts
fi

# ---------- containerd ----------
PAUSE_IMAGE="$(bash "$HERE/pause-image.sh")"
PAUSE_ARCHIVE="${PAUSE_IMAGE#*=}"
PAUSE_NAME="${PAUSE_IMAGE%%=*}"
SOCK="$STATE/containerd.sock"
cat >"$STATE/containerd.toml" <<TOML
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_NAME"
  # root here lacks CAP_SYS_RESOURCE: lowering an OOM score is all it may do.
  restrict_oom_score_adj = true
  # Pods' network namespaces under the state dir, not /run/netns: stop.sh unmounts them with the rest.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
TOML
# Pods on a bridge whose gateway is the sandbox itself: they reach the node's address (and so the
# test's servers), nothing else exists to reach.
cat >"$STATE/cni/net.d/10-ffop.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "ffop-pods",
  "plugins": [
    {
      "type": "bridge", "bridge": "$POD_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$STATE/cni/ipam", "ranges": [[{ "subnet": "$POD_CIDR" }]], "routes": [{ "dst": "0.0.0.0/0" }] }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
JSON
launch containerd containerd --config "$STATE/containerd.toml"
for _ in $(seq 100); do [[ -S "$SOCK" ]] && ctr --address "$SOCK" version >/dev/null 2>&1 && break; alive containerd; sleep 0.1; done
ctr --address "$SOCK" version >/dev/null || die "containerd did not answer"
import_start=$SECONDS
# Unpacked now (into the snapshotter CRI uses), while the machine is otherwise idle: a pod's first
# container would unpack its image then, next to whatever else the test is running.
for archive in "$PAUSE_ARCHIVE" "$@"; do
  ctr --address "$SOCK" -n k8s.io images import --snapshotter overlayfs "$archive" >/dev/null
done
log "imported and unpacked $(( $# + 1 )) image(s) in $((SECONDS - import_start))s"

# ---------- kubelet ----------
# kubelet wants its cgroup root to exist under every controller already.
for controller in /sys/fs/cgroup/*/; do
  [[ -d "$controller" && ! -L "${controller%/}" ]] || continue
  mkdir -p "$controller${CGROUP_ROOT#/}"
done
# A new cpuset cgroup starts with no CPUs and no memory nodes: give it its parent's.
for f in cpuset.cpus cpuset.mems; do
  [[ -f "/sys/fs/cgroup/cpuset/$f" ]] && cat "/sys/fs/cgroup/cpuset/$f" >"/sys/fs/cgroup/cpuset/${CGROUP_ROOT#/}/$f"
done
# Its client certificate, signed by the control plane's CA, as the Node authorizer expects.
if [[ ! -f "$STATE/pki/kubelet.crt" ]]; then
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$STATE/pki/kubelet.key" \
    -subj "/O=system:nodes/CN=system:node:$NODE_NAME" -out "$STATE/pki/kubelet.csr" 2>/dev/null
  printf 'extendedKeyUsage = clientAuth\n' >"$STATE/pki/kubelet.ext"
  openssl x509 -req -in "$STATE/pki/kubelet.csr" -CA "$FFOP_KCP_CA_FILE" -CAkey "$FFOP_KCP_CA_KEY_FILE" \
    -CAcreateserial -days 30 -extfile "$STATE/pki/kubelet.ext" -out "$STATE/pki/kubelet.crt" 2>/dev/null
fi
cat >"$STATE/kubelet.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: ffop-test
  cluster: { server: "$FFOP_KCP_SERVER", certificate-authority: "$FFOP_KCP_CA_FILE" }
users:
- name: kubelet
  user: { client-certificate: "$STATE/pki/kubelet.crt", client-key: "$STATE/pki/kubelet.key" }
contexts:
- name: ffop-test
  context: { cluster: ffop-test, user: kubelet }
current-context: ffop-test
YAML
# Pods resolve nothing (there is no cluster DNS): an empty resolver list.
: >"$STATE/resolv.conf"
cat >"$STATE/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
oomScoreAdj: 0
containerRuntimeEndpoint: unix://$SOCK
# The address of the node's name: the API server reaches the kubelet there (kubectl exec/logs).
address: $KUBELET_ADDRESS
port: 10250
readOnlyPort: 0
healthzBindAddress: $KUBELET_ADDRESS
healthzPort: 10248
# Not /var/log/pods: kubelets that share it remove each other's pods' logs.
podLogsDir: $STATE/pod-logs
authentication:
  anonymous: { enabled: true }
  webhook: { enabled: false }
  x509: { clientCAFile: "$FFOP_KCP_CA_FILE" }
authorization: { mode: AlwaysAllow }
resolvConf: $STATE/resolv.conf
serializeImagePulls: false
# A test machine's disk may be fuller than a production node's: evict only when really out of room.
evictionHard: { memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%" }
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
maxPods: 30
YAML
launch kubelet "$BIN/kubelet" \
  --config="$STATE/kubelet.yaml" \
  --kubeconfig="$STATE/kubelet.kubeconfig" \
  --hostname-override="$NODE_NAME" \
  --node-ip="$NODE_IP" \
  --root-dir="$STATE/kubelet" \
  --cert-dir="$STATE/kubelet-pki" \
  --v=1

# One scheduler for the cluster, started with the first node (and stopped with it).
if ((INDEX == 1)); then
  launch kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$KUBECONFIG" \
    --authentication-kubeconfig="$KUBECONFIG" \
    --authorization-kubeconfig="$KUBECONFIG" \
    --bind-address=127.0.0.1 \
    --leader-elect=false
fi

{
  printf '%s=%q\n' \
    CONTAINERD_ADDRESS "$SOCK" \
    FFOP_NODE_NAME "$NODE_NAME" \
    FFOP_NODE_INDEX "$INDEX" \
    FFOP_NODE_IP "$NODE_IP" \
    FFOP_NODE_POD_CIDR "$POD_CIDR" \
    FFOP_NODE_POD_BRIDGE "$POD_BRIDGE" \
    FFOP_NODE_CGROUP_ROOT "$CGROUP_ROOT" \
    FFOP_NODE_LOG_DIR "$LOGS" \
    FFOP_PAUSE_IMAGE "$PAUSE_NAME"
} >"$STATE/env"

deadline=$((SECONDS + ${FFOP_NODE_START_TIMEOUT:-120}))
until [[ "$("$KUBECTL" --kubeconfig="$KUBECONFIG" get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]; do
  alive containerd; alive kubelet
  if ((INDEX == 1)); then alive kube-scheduler; fi
  ((SECONDS < deadline)) || { tail -n 30 "$LOGS/kubelet.log" >&2; die "the node did not become Ready"; }
  sleep 0.5
done
log "node $NODE_NAME Ready"
