#!/usr/bin/env bash
# Stops what e2e/node/start.sh started (kubelet, kube-scheduler if this node runs it, containerd and
# the containers' shims) and unmounts what they mounted under the node's state dir, so that the dir
# can be removed.
#   e2e/node/stop.sh [--kill] <node-state-dir>
# --kill: SIGKILL everything at once, as when the machine dies (the default lets kubelet and
# containerd end on SIGTERM; the containers are killed either way).
set -euo pipefail
signal=TERM
if [[ "${1:-}" == --kill ]]; then
  signal=KILL
  shift
fi
[[ $# -eq 1 ]] || { echo "usage: $0 [--kill] <node-state-dir>" >&2; exit 2; }
[[ -d "$1" ]] || exit 0
STATE="$(cd "$1" && pwd)"

for name in kubelet kube-scheduler containerd; do
  pid="$(cat "$STATE/pids/$name.pid" 2>/dev/null || true)"
  if [[ -n "$pid" ]]; then kill -s "$signal" "$pid" 2>/dev/null || true; fi
done
# The shims (and the containers under them) outlive containerd: find them by the socket they serve.
for pid in $(pgrep -f "containerd-shim.*-address $STATE/containerd.sock" || true); do
  pkill -9 -P "$pid" 2>/dev/null || true
  kill -9 "$pid" 2>/dev/null || true
done
sleep 0.5
# Deepest mounts first (container root filesystems, pod volumes, the sandboxes' shm, the pods' network
# namespaces).
findmnt -rn -o TARGET | grep -F "$STATE/" | sort -r | while read -r target; do
  umount -l "$target" 2>/dev/null || true
done
# The pods' ends of the node's bridge: a network namespace outlives its pod while anything holds it, and
# the next node with this bridge would hand out the same addresses.
bridge="$(sed -n 's/^FFOP_NODE_POD_BRIDGE=//p' "$STATE/env" 2>/dev/null || true)"
if [[ -n "$bridge" ]]; then
  for link in $(ip -o link show master "$bridge" 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
    ip link del "$link" 2>/dev/null || true
  done
fi
