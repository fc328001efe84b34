#!/usr/bin/env bash
# The whole test suite: installs what it needs, type-checks, runs unit tests, runs the database and
# end-to-end suites once against PGlite and once against a real PostgreSQL it starts (and stops),
# with a real S3 server (versitygw) for the S3 storage tests.
set -euo pipefail
cd "$(dirname "$0")/.."

FFOP_NEED_POSTGRES=1 bash scripts/ensure-system-deps.sh
bash scripts/ensure-npm-deps.sh
# The OpenAPI conformance test's schemathesis, installed once (pinned) into the cache.
bash scripts/schemathesis.sh >/dev/null

# The compiled service (for the end-to-end tests that run it as `npm start` does) and the start gate
# library that the confinement tests load.
echo "== build"
bash scripts/build.sh
echo "== typecheck"
npx --no-install tsc --noEmit -p .
echo "== lint (prettier, eslint, shellcheck)"
lint_status=0
bash scripts/lint.sh || lint_status=1

pg_url=$(bash scripts/postgres.sh start)
# versitygw (a real S3 server that checks signatures), built once into the tools cache.
eval "$(bash scripts/versitygw.sh start)"
export FFOP_TEST_S3_ENDPOINT FFOP_TEST_S3_REGION FFOP_TEST_S3_ACCESS_KEY FFOP_TEST_S3_SECRET_KEY
trap 'bash scripts/postgres.sh stop; bash scripts/versitygw.sh stop' EXIT

# Unit tests need neither database; *.db.test.ts and e2e tests run against both.
mapfile -t unit < <(find core api operator runner-image -name '*.test.ts' ! -name '*.db.test.ts' | sort)
mapfile -t dbtests < <(find core api operator runner-image e2e -name '*.db.test.ts' | sort)
run() { node --import tsx --test --test-concurrency="${FFOP_TEST_CONCURRENCY:-2}" "$@"; }

status=$lint_status
echo "== unit tests"
run "${unit[@]}" || status=1
echo "== database and end-to-end tests on PGlite"
FFOP_TEST_DATABASE_URL=pglite:memory run "${dbtests[@]}" || status=1
echo "== database and end-to-end tests on PostgreSQL"
FFOP_TEST_DATABASE_URL=$pg_url run "${dbtests[@]}" || status=1

# Cluster mode against a real control plane built from the Kubernetes Go modules (the first build
# on a machine takes about 20 minutes; later runs use the cached binaries).
if [ "${FFOP_SKIP_CLUSTER_TESTS:-0}" != 1 ]; then
  echo "== cluster tests (kube-apiserver, kube-controller-manager, etcd; PostgreSQL)"
  bash e2e/control-plane/build.sh >/dev/null
  # Kueue (the batch-admission controller) from its Go module, for the Kueue tests and the chart's Kueue objects.
  bash e2e/kueue/build.sh >/dev/null
  mapfile -t clustertests < <(find crds charts e2e/cluster -name '*.test.ts' | sort)
  FFOP_TEST_DATABASE_URL=$pg_url run "${clustertests[@]}" || status=1
fi

# The Helm chart installed on a real node (kubelet, containerd, runc) with the images built here, in a
# sandbox of its own network, mount and PID namespaces (e2e/node/sandbox.sh). Needs root.
if [ "${FFOP_SKIP_CLUSTER_TESTS:-0}" != 1 ] && [ "${FFOP_SKIP_NODE_TESTS:-0}" != 1 ]; then
  echo "== real node tests (the chart on kubelet + containerd, images built by scripts/build-images.sh)"
  FFOP_NEED_NODE=1 FFOP_NEED_IMAGES=1 bash scripts/ensure-system-deps.sh
  mapfile -t nodetests < <(find e2e/node -name '*.node.test.ts' | sort)
  # The images are built out here: the sandbox has no network, and a changed root filesystem needs
  # Debian's mirrors (inside, the tests find them cached). The previous release's too, for the upgrade
  # test (e2e/node/kubectl.node.test.ts; about a minute the first time, seconds once cached).
  if bash scripts/build-images.sh >/dev/null && bash e2e/node/previous-release.sh >/dev/null; then
    bash e2e/node/sandbox.sh node --import tsx --test --test-concurrency=1 "${nodetests[@]}" || status=1
  else
    status=1
  fi
fi
exit $status
