#!/usr/bin/env bash
# Smoke test of the test control plane: starts it, checks that the API server is ready, that the
# Job controller creates a Job's Pod (Pending: there is no kubelet) and that deleting the Job with
# propagationPolicy=Background lets the garbage collector remove the Pod; then stops everything.
# Exits non-zero on any failure.
#
#   e2e/control-plane/smoke.sh [state-dir]   (default: a new temp dir, removed at the end)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -ge 1 ]]; then
  STATE="$1"; KEEP_STATE=1
else
  STATE="$(mktemp -d "${TMPDIR:-/tmp}/ffop-kcp-smoke.XXXXXX")"; KEEP_STATE=0
fi
NS=ffop-smoke
JOB=smoke-job
TIMEOUT=${FFOP_SMOKE_TIMEOUT:-120}

cleanup() {
  "$HERE/stop.sh" "$STATE" || true
  if [[ $KEEP_STATE == 0 ]]; then rm -rf "$STATE"; fi
}
trap cleanup EXIT

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }
step() { echo "smoke: $*"; }

# wait_until <what> <expected output> <command...>
wait_until() {
  local what="$1" want="$2"; shift 2
  local deadline=$((SECONDS + TIMEOUT)) got=""
  while ((SECONDS < deadline)); do
    got="$("$@" 2>/dev/null || true)"
    [[ "$got" == "$want" ]] && return 0
    sleep 0.5
  done
  fail "timed out waiting for $what (last: '$got')"
}

FFOP_KCP_OWNER_PID=$$ "$HERE/start.sh" "$STATE"
set -a
# shellcheck disable=SC1091
source "$STATE/env"
set +a
k() { "$KUBECTL" "$@"; }

step "API server $FFOP_KCP_SERVER"
[[ "$(k get --raw /readyz)" == "ok" ]] || fail "/readyz is not ok"
k version

k create namespace "$NS"
# The serviceaccount controller must make the namespace's default ServiceAccount before the
# ServiceAccount admission plugin lets any Pod in.
wait_until "ServiceAccount $NS/default" default k -n "$NS" get serviceaccount default -o 'jsonpath={.metadata.name}'

k -n "$NS" apply -f - <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: $JOB
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
        command: ["sh", "-c", "echo hello"]
EOF

pods() { k -n "$NS" get pods -l "batch.kubernetes.io/job-name=$JOB" "$@"; }
wait_until "the Job controller to create a Pending Pod" Pending pods -o 'jsonpath={.items[*].status.phase}'
pods
owner="$(pods -o 'jsonpath={.items[0].metadata.ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].name}')"
[[ "$owner" == "Job/$JOB" ]] || fail "pod owner is '$owner', want Job/$JOB"
step "the Job controller created the Pod, owned by $owner"

k -n "$NS" delete job "$JOB" --cascade=background
wait_until "the Job to be gone" "" k -n "$NS" get jobs -o 'jsonpath={.items[*].metadata.name}'
wait_until "the garbage collector to delete the Pod" "" pods -o 'jsonpath={.items[*].metadata.name}'
step "the garbage collector deleted the Pod"

k delete namespace "$NS" --wait=false
step "ok"
