#!/usr/bin/env bash
# Stops what e2e/node/start.sh started (kubelet, kube-scheduler, containerd and the containers' shims)
# and unmounts what they mounted under the node's state dir, so that the dir can be removed.
#   e2e/node/stop.sh <node-state-dir>
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 <node-state-dir>" >&2; exit 2; }
[[ -d "$1" ]] || exit 0
STATE="$(cd "$1" && pwd)"

for name in kubelet kube-scheduler containerd; do
  pid="$(cat "$STATE/pids/$name.pid" 2>/dev/null || true)"
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; fi
done
# The shims (and the containers under them) outlive containerd: find them by the socket they serve.
for pid in $(pgrep -f "containerd-shim.*-address $STATE/containerd.sock" || true); do
  pkill -9 -P "$pid" 2>/dev/null || true
  kill -9 "$pid" 2>/dev/null || true
done
sleep 0.5
# Deepest mounts first (container root filesystems, pod volumes, the sandboxes' shm).
findmnt -rn -o TARGET | grep -F "$STATE/" | sort -r | while read -r target; do
  umount -l "$target" 2>/dev/null || true
done
