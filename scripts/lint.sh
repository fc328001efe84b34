#!/usr/bin/env bash
# Lint: formatting (prettier --check), type-aware TypeScript rules (eslint, eslint.config.js), the
# shell scripts (shellcheck) and the docs (scripts/check-docs.ts: README.md at most 150 lines, every
# link in README.md and docs/ inside the repository and found). Runs all four and fails if any
# fails; `npm run format` fixes what prettier and eslint can fix by themselves.
#
# Prettier and ESLint cache their results in node_modules/.cache/ (keyed by file content). A cached
# file is not linted again when only a file it imports changed, so a type-aware finding that such a
# change causes shows on a run without the caches: FFOP_LINT_NO_CACHE=1 (CI's node_modules is fresh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-npm-deps.sh
command -v shellcheck >/dev/null 2>&1 || bash scripts/ensure-system-deps.sh

prettier_cache=(--cache --cache-strategy content --cache-location node_modules/.cache/prettier/.prettier-cache)
eslint_cache=(--cache --cache-strategy content --cache-location node_modules/.cache/eslint/)
if [ "${FFOP_LINT_NO_CACHE:-0}" = 1 ]; then
  prettier_cache=()
  eslint_cache=()
fi

# Every shell script: *.sh anywhere, and extensionless files with a shell shebang under scripts/, e2e/
# and .ci/ (.ci/run).
shell_scripts=()
while IFS= read -r -d '' file; do
  case "$file" in
    *.sh) shell_scripts+=("$file") ;;
    *)
      if IFS= read -r first_line <"$file" && [[ $first_line =~ ^#!.*[/[:space:]](ba)?sh([[:space:]]|$) ]]; then
        shell_scripts+=("$file")
      fi
      ;;
  esac
done < <(find . \( -path ./node_modules -o -path ./dist -o -path ./.git -o -path ./data -o -path ./.tmp \) -prune -o \
  -type f \( -name '*.sh' -o \( ! -name '*.*' \( -path './scripts/*' -o -path './e2e/*' -o -path './.ci/*' \) \) \) \
  -print0 | sort -z)

status=0
echo "== prettier"
node_modules/.bin/prettier --check --log-level=warn "${prettier_cache[@]}" . || status=1
echo "== eslint"
node_modules/.bin/eslint --max-warnings=0 "${eslint_cache[@]}" . || status=1
echo "== shellcheck (${#shell_scripts[@]} scripts)"
shellcheck "${shell_scripts[@]}" || status=1
echo "== docs"
# The check's own tests first (they are not under the unit suite's folders), then the check.
node --import tsx --test --test-reporter=dot scripts/check-docs.test.ts || status=1
node --import tsx scripts/check-docs.ts || status=1
exit "$status"
