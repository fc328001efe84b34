#!/usr/bin/env bash
# Builds the Kueue manager (the batch-admission controller of Kubernetes) from its published Go module
# and caches it outside the repo, keyed by version, with the manifests of the same release taken from
# the module's source:
#   ${FFOP_TOOLS_DIR:-$HOME/.cache/ffmpeg-operator/tools}/kueue-<ver>/
#     kueue                               the manager (cmd/kueue)
#     manifests/crds/*.yaml               its CustomResourceDefinitions (config/components/crd/bases)
#     manifests/webhook/manifests.yaml    its webhook configurations (config/components/webhook)
# A cached run only tests for the files, so it returns at once; missing manifests alone are copied
# without building again. Prints FFOP_KUEUE_BIN_DIR=... on stdout; progress goes to stderr.
# Downloads that fail with a network error are tried again.
#
# Env: FFOP_KUEUE_VERSION (default below), FFOP_TOOLS_DIR.
set -euo pipefail

KUEUE_VERSION="${FFOP_KUEUE_VERSION:-v0.17.0}"
KUEUE_MODULE=sigs.k8s.io/kueue
TOOLS_DIR="${FFOP_TOOLS_DIR:-$HOME/.cache/ffmpeg-operator/tools}"
KUEUE_DIR="$TOOLS_DIR/kueue-$KUEUE_VERSION"

log() { echo "kueue/build.sh: $*" >&2; }

binary_cached() { [[ -x "$KUEUE_DIR/kueue" ]]; }
manifests_cached() { [[ -f "$KUEUE_DIR/manifests/webhook/manifests.yaml" ]]; }
cached() { binary_cached && manifests_cached; }
print_location() { echo "FFOP_KUEUE_BIN_DIR=$KUEUE_DIR"; }

if cached; then
  print_location
  exit 0
fi

command -v go >/dev/null || { log "go is not installed"; exit 1; }
mkdir -p "$TOOLS_DIR"

# Two test runs may ask for a build at once: one builds, the other waits and then finds the cache.
# A lock of its own, so that building Kueue never waits for a control-plane build (or the reverse).
exec 9>"$TOOLS_DIR/.build-kueue.lock"
flock 9
if cached; then
  print_location
  exit 0
fi

# Never fetch another toolchain, never let a surrounding go.work or vendor dir interfere.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/ffop-kueue-build.XXXXXX")"
trap 'chmod -R u+w "$SCRATCH" 2>/dev/null; rm -rf "$SCRATCH"' EXIT

# `go mod download -json` prints one JSON object; pull one string field out of it without jq.
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -n1; }

# go directive of a go.mod file, e.g. "1.25.0".
go_directive() { awk '$1 == "go" { print $2; exit }' "$1"; }

check_toolchain() {
  local want="$1" have
  have="$(go env GOVERSION)"; have="${have#go}"
  if [[ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" != "$want" ]]; then
    log "go $have is older than the go $want that $2 needs"; exit 1
  fi
}

# with_retries <command...>: runs the command up to 4 times while it fails with what looks like a
# network error (the module proxy timing out or dropping the connection); any other failure ends at
# once. Its stdout is passed on only from the run that succeeded. `go mod download -json` reports
# its errors on stdout, so both streams are searched.
with_retries() {
  local attempt out="$SCRATCH/retry.out" err="$SCRATCH/retry.err" code
  for attempt in 1 2 3 4; do
    code=0
    "$@" >"$out" 2>"$err" || code=$?
    cat "$err" >&2
    if ((code == 0)); then
      cat "$out"
      return 0
    fi
    cat "$out" >&2
    if ((attempt < 4)) && grep -qiE 'timeout|timed out|connection (reset|refused)|unexpected EOF|TLS handshake|temporary failure|no such host|50[234] |too many requests|429' "$out" "$err"; then
      log "network error (attempt $attempt of 4); trying again in $((attempt * 10)) s"
      sleep $((attempt * 10))
      continue
    fi
    return "$code"
  done
}

start=$SECONDS
info="$(with_retries go mod download -json "$KUEUE_MODULE@$KUEUE_VERSION")" ||
  { log "could not download $KUEUE_MODULE@$KUEUE_VERSION"; exit 1; }
mod_file="$(json_field GoMod <<<"$info")"
src_dir="$(json_field Dir <<<"$info")"
[[ -f "$mod_file" && -d "$src_dir" ]] || { log "could not download $KUEUE_MODULE@$KUEUE_VERSION"; exit 1; }

build_binary() {
  local go_version out ldflags
  log "building Kueue $KUEUE_VERSION; this takes a while"
  go_version="$(go_directive "$mod_file")"
  check_toolchain "$go_version" "$KUEUE_MODULE@$KUEUE_VERSION"
  # The build takes the release's go.mod as a dependency's, where replace directives do not apply;
  # say so rather than build silently something other than the release.
  if grep -qE '^[[:space:]]*replace\b' "$mod_file"; then
    log "warning: $KUEUE_MODULE@$KUEUE_VERSION's go.mod has replace directives, which a build as a dependency ignores"
  fi
  mkdir -p "$SCRATCH/build"
  printf 'module ffop.local/kueue-build\n\ngo %s\n\nrequire %s %s\n' \
    "$go_version" "$KUEUE_MODULE" "$KUEUE_VERSION" >"$SCRATCH/build/go.mod"
  out="$SCRATCH/kueue"
  ldflags="-s -w -X $KUEUE_MODULE/pkg/version.GitVersion=$KUEUE_VERSION"
  ldflags+=" -X $KUEUE_MODULE/pkg/version.GitCommit=$KUEUE_VERSION -X $KUEUE_MODULE/pkg/version.BuildDate=1970-01-01"
  (
    cd "$SCRATCH/build"
    # Resolve and download every module the manager imports first (the one step that uses the
    # network), so that the build itself runs offline.
    with_retries go list -deps "$KUEUE_MODULE/cmd/kueue" >/dev/null
    log "go build $KUEUE_MODULE/cmd/kueue"
    go build -trimpath -ldflags "$ldflags" -o "$out" "$KUEUE_MODULE/cmd/kueue"
  )
  # A rename, so that a half-written binary never looks cached.
  mkdir -p "$KUEUE_DIR"
  mv "$out" "$KUEUE_DIR/kueue.partial"
  mv "$KUEUE_DIR/kueue.partial" "$KUEUE_DIR/kueue"
  log "installed $KUEUE_DIR/kueue"
}

# The CRDs and webhook configurations as the release generates them, before its kustomize overlays
# (which point them at an in-cluster Service); e2e/kueue/start.sh points them at the manager it runs.
copy_manifests() {
  local crd_src="$src_dir/config/components/crd/bases" webhook_src="$src_dir/config/components/webhook/manifests.yaml"
  local out="$SCRATCH/manifests"
  compgen -G "$crd_src/*.yaml" >/dev/null || { log "found no CRDs in $crd_src"; exit 1; }
  [[ -f "$webhook_src" ]] || { log "found no webhook configurations at $webhook_src"; exit 1; }
  mkdir -p "$out/crds" "$out/webhook"
  cp "$crd_src"/*.yaml "$out/crds/"
  cp "$webhook_src" "$out/webhook/manifests.yaml"
  chmod -R u+w "$out"
  mkdir -p "$KUEUE_DIR"
  rm -rf "$KUEUE_DIR/manifests.partial"
  mv "$out" "$KUEUE_DIR/manifests.partial"
  rm -rf "$KUEUE_DIR/manifests"
  mv "$KUEUE_DIR/manifests.partial" "$KUEUE_DIR/manifests"
  log "installed $(find "$KUEUE_DIR/manifests/crds" -name '*.yaml' | wc -l) CRDs and the webhook configurations in $KUEUE_DIR/manifests"
}

binary_cached || build_binary
manifests_cached || copy_manifests
log "done in $((SECONDS - start))s"
print_location
