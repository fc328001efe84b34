#!/usr/bin/env bash
# One source of truth for the cluster-mode manifests:
#   - charts/ffmpeg-operator/crds/ffmpegcommand.yaml is a copy of crds/ffmpegcommand.yaml;
#   - operator/manifests/rbac.yaml is the chart's templates/rbac.yaml rendered for namespace ffmpeg-operator.
# Run after changing either source; charts/chart.test.ts checks that both are up to date.
#
#   charts/render-manifests.sh            write both files
#   charts/render-manifests.sh --stdout   print the rendered rbac.yaml only (what the test compares)
#
# Env: HELM (default: helm on PATH, else the one e2e/control-plane/build.sh caches).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHART="$ROOT/charts/ffmpeg-operator"

HELM="${HELM:-$(command -v helm || true)}"
if [[ -z "$HELM" ]]; then
  HELM="$(sed -n 's/^FFOP_HELM_BIN_DIR=//p' <<<"$("$ROOT/e2e/control-plane/build.sh")")/helm"
fi

render_rbac() {
  cat <<'HEADER'
# Generated from charts/ffmpeg-operator/templates/rbac.yaml by charts/render-manifests.sh: edit the
# template, then run the script. For installs without Helm, in namespace ffmpeg-operator (rewrite every
# `namespace: ffmpeg-operator` to install elsewhere).
HEADER
  # The required values only let the chart render; nothing of them appears in templates/rbac.yaml.
  "$HELM" template ffmpeg-operator "$CHART" --namespace ffmpeg-operator --show-only templates/rbac.yaml \
    --set database.url=postgres://unused --set s3.endpoint=https://unused --set s3.bucket=unused \
    --set s3.accessKey=unused --set s3.secretKey=unused
}

if [[ "${1:-}" == --stdout ]]; then
  render_rbac
  exit 0
fi
cp "$ROOT/crds/ffmpegcommand.yaml" "$CHART/crds/ffmpegcommand.yaml"
render_rbac >"$ROOT/operator/manifests/rbac.yaml.tmp"
mv "$ROOT/operator/manifests/rbac.yaml.tmp" "$ROOT/operator/manifests/rbac.yaml"
echo "wrote charts/ffmpeg-operator/crds/ffmpegcommand.yaml and operator/manifests/rbac.yaml" >&2
