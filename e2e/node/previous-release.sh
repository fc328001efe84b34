#!/usr/bin/env bash
# The previous release, for the upgrade test (e2e/node/kubectl.node.test.ts): its source tree from git
# (`git archive` of the commit, so nothing is registered in the repository), its images built by its own
# scripts/build-images.sh into the same cache, and prints (stdout) where they are:
#   FFOP_PREVIOUS_RELEASE=<commit>
#   FFOP_PREVIOUS_CHART=/..../charts/ffmpeg-operator
#   FFOP_SERVICE_IMAGE=... FFOP_RUNNER_IMAGE=... FFOP_SERVICE_IMAGE_ARCHIVE=... FFOP_RUNNER_IMAGE_ARCHIVE=...
#                                                               (as scripts/build-images.sh prints them)
# The release is ${FFOP_PREVIOUS_RELEASE:-the commit below}: the last one whose FfmpegCommand was
# v1alpha1 only. It needs the repository's history (CI's clone has it; a shallow clone does not).
#
# The tree is kept under ${FFOP_IMAGES_DIR:-~/.cache/ffmpeg-operator/images}/../previous-release/<commit>
# (a commit's files never change): a second run compiles nothing and finds its images cached. When its
# package-lock.json is this repository's, it uses this repository's node_modules (a link), so it needs
# no network, and runs inside e2e/node/sandbox.sh too once built outside (scripts/test.sh does).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
release=${FFOP_PREVIOUS_RELEASE:-470249a}
images=${FFOP_IMAGES_DIR:-$HOME/.cache/ffmpeg-operator/images}
log() { printf 'previous-release: %s\n' "$*" >&2; }

commit=$(git rev-parse --verify --quiet "$release^{commit}") || {
  log "commit $release is not in this clone (a shallow clone lacks the history: git fetch --unshallow)"
  exit 1
}
tree=$(dirname "$images")/previous-release/$commit
mkdir -p "$(dirname "$tree")"
exec 8>"$tree.lock"
flock 8
if [ ! -f "$tree/.ffop-extracted" ]; then
  log "extracting $commit"
  rm -rf "$tree"
  mkdir -p "$tree"
  git archive --format=tar "$commit" | tar -xf - -C "$tree"
  touch "$tree/.ffop-extracted"
fi
if cmp -s "$tree/package-lock.json" package-lock.json; then
  # This clone's node_modules (linked again each time: the clone that made the link may be gone).
  bash scripts/ensure-npm-deps.sh
  if [ -L "$tree/node_modules" ] || [ ! -e "$tree/node_modules" ]; then ln -sfn "$repo/node_modules" "$tree/node_modules"; fi
elif [ ! -d "$tree/node_modules" ] || [ -L "$tree/node_modules" ]; then
  rm -f "$tree/node_modules"
  log "its package-lock.json differs from this clone's: its build-images.sh runs npm ci there (needs the network)"
fi
# Its ensure-npm-deps.sh reinstalls when the lock is newer than the install stamp; a linked
# node_modules is this repository's, installed from the same lock.
if [ -L "$tree/node_modules" ]; then touch -r "$tree/node_modules/.ffop-installed" "$tree/package-lock.json"; fi

start=$SECONDS
out=$(bash "$tree/scripts/build-images.sh")
log "images of $commit in $((SECONDS - start))s"
echo "FFOP_PREVIOUS_RELEASE=$commit"
echo "FFOP_PREVIOUS_CHART=$tree/charts/ffmpeg-operator"
echo "$out"
