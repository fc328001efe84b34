#!/usr/bin/env bash
# Runs a command inside a sandbox made for a real test node: its own network, mount and PID
# namespaces. Everything the command starts (control plane, containerd, kubelet, pods, test servers)
# lives there: servers can listen on the node's address without being reachable from anywhere else,
# kubelet's iptables chains and network sysctls stay in the sandbox, its writes to global kernel
# sysctls land on files laid over them, and when the command ends every process left is killed and
# the cgroups the node made are removed.
#
#   e2e/node/sandbox.sh <command> [args...]
#
# The first node's address is $FFOP_NODE_IP (10.213.0.1, on a bridge with no ports); more nodes add
# theirs to the same bridge (10.213.0.N) and their names to the sandbox's /etc/hosts. Pods get
# addresses on a CNI bridge per node (e2e/node/start.sh) and reach every node's address through their
# gateway.
set -euo pipefail

if [[ "${FFOP_NODE_SANDBOX:-}" != 1 ]]; then
  [[ $# -ge 1 ]] || { echo "usage: $0 <command> [args...]" >&2; exit 2; }
  [[ "$(id -u)" == 0 ]] || { echo "sandbox.sh: a real node needs root" >&2; exit 1; }
  exec unshare --net --mount --pid --fork --mount-proc --propagation private \
    env FFOP_NODE_SANDBOX=1 FFOP_NODE_IP=10.213.0.1 bash "$0" "$@"
fi

ip link set lo up
ip link add ffop-node type bridge
ip addr add "$FFOP_NODE_IP/24" dev ffop-node
ip link set ffop-node up
# kubelet and containerd expect shared mount propagation (volumes mounted for pods).
mount --make-rshared /

# kubelet sets these host-wide sysctls at start; here it writes to copies instead.
shadow="$(mktemp -d "${TMPDIR:-/tmp}/ffop-node-sysctl.XXXXXX")"
for key in vm/overcommit_memory kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes; do
  [[ -e "/proc/sys/$key" ]] || continue
  copy="$shadow/${key//\//.}"
  cat "/proc/sys/$key" >"$copy"
  mount --bind "$copy" "/proc/sys/$key"
done
# A writable /etc/hosts of the sandbox's own: e2e/node/start.sh adds each node's name there.
cp /etc/hosts "$shadow/hosts"
grep -qE '^127\.0\.0\.1[[:space:]].*\blocalhost\b' "$shadow/hosts" || echo '127.0.0.1 localhost' >>"$shadow/hosts"
mount --bind "$shadow/hosts" /etc/hosts
# Folders of the machine that containerd, its shims, the CNI plugins and kubelet write into whatever
# their configuration says (shim sockets and runc state, the CNI result cache, container log links):
# empty ones of the sandbox's own instead. A folder made here for the mount is removed at the end if it
# is still empty.
made=()
for dir in /run/containerd /var/lib/cni /var/log/containers; do
  if [[ ! -d "$dir" ]]; then
    mkdir -p "$dir"
    made+=("$dir")
  fi
  mount -t tmpfs -o mode=0755,size=64m ffop-node "$dir"
done

# This shell is PID 1 of the sandbox: run the command as its child, then clean up after it.
status=0
"$@" || status=$?
kill -9 -1 2>/dev/null || true   # every other process in the sandbox (shims, containers, servers)
sleep 0.5
# Cgroups the node made (named by e2e/node/start.sh), deepest first.
for root in /sys/fs/cgroup/*/ffop-node-* /sys/fs/cgroup/unified/ffop-node-*; do
  if [[ -d "$root" ]]; then find "$root" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
done
for dir in /run/containerd /var/lib/cni /var/log/containers; do
  umount -R -l "$dir" 2>/dev/null || true
done
for dir in "${made[@]}"; do rmdir "$dir" 2>/dev/null || true; done
umount /etc/hosts 2>/dev/null || true
rm -rf "$shadow"
exit "$status"
