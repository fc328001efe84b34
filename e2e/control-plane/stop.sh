#!/usr/bin/env bash
# Stops what start.sh started for <state-dir>, by the pids it recorded. Safe to run again.
#
#   e2e/control-plane/stop.sh <state-dir>
#
# A pid is signalled only while its command line still names the state dir, so a pid that the
# system has since reused for another process is left alone. Keeps the state dir (certificates,
# etcd data, logs): start.sh can start the same cluster again; delete the dir to drop it.
set -uo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 <state-dir>" >&2; exit 2; }
[[ -d "$1" ]] || exit 0
STATE="$(cd "$1" && pwd)"
PIDS="$STATE/pids"

# True while pid $1 is alive and one of ours.
ours() {
  [[ -r "/proc/$1/cmdline" ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$STATE/"
}

# stop_one <name>: SIGTERM, up to 15 s to exit, then SIGKILL.
stop_one() {
  local file="$PIDS/$1.pid" pid i
  [[ -f "$file" ]] || return 0
  pid="$(cat "$file")"
  # The watchdog runs this script through exec: it must not signal itself.
  if [[ "$pid" != "$$" ]] && ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 150; i++)); do
      ours "$pid" || break
      sleep 0.1
    done
    if ours "$pid"; then
      echo "stop.sh: $1 (pid $pid) ignored SIGTERM; killing it" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
  fi
  rm -f "$file"
}

# Clients first, etcd last, so nothing writes to a store that is going away.
for name in watchdog kube-controller-manager kube-apiserver etcd; do
  stop_one "$name"
done
exit 0
