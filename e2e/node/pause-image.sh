#!/usr/bin/env bash
# Builds the pod sandbox ("pause") image from kubernetes' own build/pause/linux/pause.c (static), as a
# docker-archive cached by the source's hash. Prints <image name>=<archive path>.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${FFOP_IMAGES_DIR:-$HOME/.cache/ffmpeg-operator/images}"
K8S_VERSION="${FFOP_K8S_VERSION:-v1.37.2}"

src="$(GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')/build/pause/linux/pause.c"
[[ -f "$src" ]] || { echo "pause-image.sh: no $src" >&2; exit 1; }
tag="$(sha256sum "$src" | cut -c1-12)"
name="localhost/ffop-pause:$tag"
archive="$CACHE/pause-$tag.tar"
if [[ ! -f "$archive" ]]; then
  mkdir -p "$CACHE"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  gcc -Os -static -o "$work/pause" "$src"
  strip "$work/pause"
  export CONTAINERS_CONF="${CONTAINERS_CONF:-$HERE/../../scripts/images/containers.conf}"
  ctr="$(buildah from scratch)"
  buildah copy "$ctr" "$work/pause" /pause >/dev/null
  buildah config --entrypoint '["/pause"]' --user 65535:65535 "$ctr"
  buildah commit --quiet "$ctr" "$name" >/dev/null
  buildah rm "$ctr" >/dev/null
  # Nodes started at once may build it at once: each writes its own file and renames it into place.
  buildah push --quiet "$name" "docker-archive:$archive.partial.$$:$name"
  mv "$archive.partial.$$" "$archive"
fi
echo "$name=$archive"
