#!/usr/bin/env bash
# `make lint-workflows`: the GitHub Actions workflows (.github/workflows/)
# checked offline by two maintained linters pinned in requirements-dev.txt:
# check-jsonschema against GitHub's workflow schema (a misspelt key, a wrong
# type), zizmor for what would let a pull request or a fork reach a release
# (persisted credentials, release caches, unpinned actions, injected
# expressions, broad permissions). Then the check's own test: a workflow with
# one such mistake must fail it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
cd "$ROOT"

lint() {
  "$VENV/bin/check-jsonschema" --builtin-schema vendor.github-workflows "$@" &&
    "$VENV/bin/zizmor" --offline --no-progress --quiet "$@" &&
    # The deploy roles trust the ref in the token's subject; a job with an
    # environment gets repo:OWNER/NAME:environment:NAME instead (docs/releases.md).
    ! grep -Hn '^\s*environment:' "$@"
}

lint .github/workflows/*.yml
echo
echo "lint-workflows: .github/workflows/ passes check-jsonschema and zizmor"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# (what the mistake is, the line it changes, what it becomes)
mutations=(
  "a misspelt key|    runs-on: ubuntu-latest|    run-on: ubuntu-latest"
  "credentials left in the checkout|        with:\n          persist-credentials: false\n|"
  "a tag's name run as shell code|        run: make release-check TAG=\"\$GITHUB_REF_NAME\"|        run: make release-check TAG=\${{ github.ref_name }}"
  "a deploy job with an environment|    needs: gate|    needs: gate\n    environment: prod"
)
for mutation in "${mutations[@]}"; do
  IFS='|' read -r why from to <<<"$mutation"
  python3 - "$from" "$to" .github/workflows/release.yml "$scratch/release.yml" <<'PY'
import sys
old, new = (arg.replace("\\n", "\n") for arg in sys.argv[1:3])
source, target = sys.argv[3], sys.argv[4]
text = open(source).read()
if old not in text:
    sys.exit(f"lint-workflows: the line {old!r} is not in {source}: update the mutations")
open(target, "w").write(text.replace(old, new, 1))
PY
  if lint "$scratch/release.yml" >/dev/null 2>&1; then
    echo "lint-workflows: a workflow with $why passes: the lint misses it" >&2
    exit 1
  fi
done
echo "lint-workflows: each of ${#mutations[@]} broken workflows fails it"
