#!/usr/bin/env bash
# `make lint-workflows`: the GitHub Actions workflows (.github/workflows/)
# checked offline by two maintained linters pinned in requirements-dev.txt:
# check-jsonschema against GitHub's workflow schema (a misspelt key, a wrong
# type), zizmor for what would let a pull request or a fork reach a release
# (persisted credentials, release caches, unpinned actions, injected
# expressions, broad permissions); then the release's own rules
# (gates.lint_workflow_jobs: nothing built or installed in a job that
# holds id-token: write; nothing the build made run in a job that obtains
# AWS credentials, only the runner's tools and scripts/; the prod role only
# in the environment prod, from main). Then the check's own test: a workflow with one such mistake must
# fail it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
cd "$ROOT"

lint() {
  "$VENV/bin/check-jsonschema" --builtin-schema vendor.github-workflows "$@" &&
    "$VENV/bin/zizmor" --offline --no-progress --quiet "$@" &&
    "$VENV/bin/petstore-lint-workflow-jobs" "$@"
}

lint .github/workflows/*.yml
# The deploy jobs' script parses (bash reads it as it runs: a stray quote
# fails a deploy only once it is reached).
bash -n scripts/pipeline-deploy.sh
echo
echo "lint-workflows: .github/workflows/ passes check-jsonschema and zizmor"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# (what the mistake is, the line it changes, what it becomes)
mutations=(
  "a misspelt key|    runs-on: ubuntu-latest|    run-on: ubuntu-latest"
  "credentials left in the checkout|        with:\n          persist-credentials: false\n|"
  "a tag's name run as shell code|        run: make release-check TAG=\"\$GITHUB_REF_NAME\"|        run: make release-check TAG=\${{ github.ref_name }}"
  "cargo run in a job holding id-token|          echo \"url=\$(scripts/pipeline-deploy.sh url dev)\" >> \"\$GITHUB_OUTPUT\"|          cargo run -p petstore-pretraffic --bin petstore-smoke -- --url \"\$(scripts/pipeline-deploy.sh url dev)\""
  "the smoke binary run in the dev job, as before|          echo \"url=\$(scripts/pipeline-deploy.sh url dev)\" >> \"\$GITHUB_OUTPUT\"|          .local/build/petstore-smoke --url \"\$(scripts/pipeline-deploy.sh url dev)\""
  "the smoke binary copied out and run in the prod job|          echo \"url=\$(scripts/pipeline-deploy.sh url prod)\" >> \"\$GITHUB_OUTPUT\"|          cp .local/build/petstore-smoke /tmp/smoke && /tmp/smoke --url \"\$(scripts/pipeline-deploy.sh url prod)\""
  "the smoke binary handed to an interpreter in the prod job|          echo \"url=\$(scripts/pipeline-deploy.sh url prod)\" >> \"\$GITHUB_OUTPUT\"|          bash -c '.local/build/petstore-smoke --url \"\$(scripts/pipeline-deploy.sh url prod)\"'"
  "the smoke job given id-token|    needs: dev\n    runs-on: ubuntu-latest\n    timeout-minutes: 15\n    permissions:\n      contents: read\n|    needs: dev\n    runs-on: ubuntu-latest\n    timeout-minutes: 15\n    permissions:\n      contents: read\n      id-token: write\n"
  "AWS keys in the smoke job's environment|          URL: \${{ needs.dev.outputs.url }}\n|          URL: \${{ needs.dev.outputs.url }}\n          AWS_ACCESS_KEY_ID: \${{ vars.SMOKE_KEY_ID }}\n"
  "sam build in a job holding id-token|        run: scripts/pipeline-deploy.sh prod .local/build|        run: sam build && scripts/pipeline-deploy.sh prod .local/build"
  "the build job given id-token|    timeout-minutes: 60\n    permissions:\n      contents: read\n    steps:|    timeout-minutes: 60\n    permissions:\n      contents: read\n      id-token: write\n    steps:"
  "the prod job without its environment|    environment: prod\n|"
  "the prod job without the main-ancestry check|            --ancestor-of \"\$GITHUB_SHA\"|            --sums-sha256 \"\$COMMIT\""
  "the dev job publishing the build again|      - name: Deploy the build to dev\n|      - run: PYTHONPATH=tools/gates/src python3 -m gates.pipeline_artifacts publish dist \"s3://\$ARTIFACT_BUCKET/builds/\$GITHUB_SHA\"\n      - name: Deploy the build to dev\n"
  "the publish job without its environment|    environment: build\n|"
  "the prod job on a tag push|    if: github.event_name == 'workflow_dispatch' && github.ref == 'refs/heads/main'|    if: startsWith(github.ref, 'refs/tags/v')"
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

# What the workflow's steps run: the build packaged to the same bytes,
# published once, fetched only as recorded at build time (moto's S3).
"$VENV/bin/pytest" -q tools/gates -m lint_workflows
