#!/usr/bin/env bash
# Stops what e2e/kueue/start.sh started for <state-dir>, by the pids it recorded. Safe to run again.
#
#   e2e/kueue/stop.sh <state-dir>
#
# Stops the manager first; then, while the control plane still answers, takes Kueue's webhooks out
# of it (their failurePolicy is Fail: with the manager gone, the API server would refuse every Job and
# Pod) and sets the conversion of its CRDs back to None. Keeps the state dir; start.sh can start
# Kueue again on it.
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
      echo "kueue/stop.sh: $1 (pid $pid) ignored SIGTERM; killing it" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
  fi
  rm -f "$file"
}

for name in watchdog kueue; do
  stop_one "$name"
done

if [[ -f "$STATE/env" ]]; then
  KUBECONFIG="$(sed -n 's/^KUBECONFIG=//p' "$STATE/env")"
  KUBECTL="$(sed -n 's/^KUBECTL=//p' "$STATE/env")"
  if [[ -f "$KUBECONFIG" && -x "$KUBECTL" ]] &&
    "$KUBECTL" --kubeconfig="$KUBECONFIG" --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
    k() { "$KUBECTL" --kubeconfig="$KUBECONFIG" --request-timeout=10s "$@" >/dev/null; }
    k delete --ignore-not-found mutatingwebhookconfiguration kueue-mutating-webhook-configuration
    k delete --ignore-not-found validatingwebhookconfiguration kueue-validating-webhook-configuration
    for crd in localqueues clusterqueues workloads cohorts multikueueclusters; do
      k patch crd "$crd.kueue.x-k8s.io" --type=merge -p '{"spec":{"conversion":{"strategy":"None","webhook":null}}}' 2>/dev/null
    done
  fi
fi
exit 0
