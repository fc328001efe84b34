# Sourced by the install scripts: `retry CMD...` runs a network step (apt, mmdebstrap, npm, pip, go)
# again when it fails, up to 3 attempts, 5 s then 10 s apart, so a mirror's or registry's passing
# error does not fail CI. Only for steps that are safe to run again (each one starts over).
# shellcheck shell=bash

retry() {
  local attempt=1 attempts=3
  until "$@"; do
    if [ "$attempt" -ge "$attempts" ]; then
      printf 'failed %s times, giving up: %s\n' "$attempts" "$*" >&2
      return 1
    fi
    printf 'failed (attempt %s of %s), again in %s s: %s\n' "$attempt" "$attempts" $((attempt * 5)) "$*" >&2
    sleep $((attempt * 5))
    attempt=$((attempt + 1))
  done
}

# How often apt tries each download again itself (Acquire::Retries; by default it gives up at once).
# shellcheck disable=SC2034  # used by the scripts that source this one
APT_RETRIES=5
