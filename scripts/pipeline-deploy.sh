#!/usr/bin/env bash
# The release workflow's deploy steps (.github/workflows/release.yml; docs/releases.md):
#
#   pipeline-deploy.sh STAGE s3://BUCKET/builds/COMMIT/packaged.yaml
#       deploy that packaged build (sam package's template, its code already in
#       the bucket) to STAGE with samconfig.toml's `--config-env STAGE`, through
#       the CloudFormation execution role ($CFN_EXECUTION_ROLE_ARN)
#   pipeline-deploy.sh url STAGE
#       the stage stack's API URL (its ApiUrl output), for the smoke run
#
# Runs with the stage's deploy role's credentials; $ARTIFACT_BUCKET names the
# bucket `sam deploy` uploads the template to (under deploys/STAGE/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SAM="${SAM:-$ROOT/.venv/bin/sam}"

# The stack a config environment deploys: samconfig.toml's stack_name for it.
stack_name() {
  python3 - "$1" "$ROOT/samconfig.toml" <<'PY'
import sys, tomllib
stage, path = sys.argv[1], sys.argv[2]
config = tomllib.load(open(path, "rb")).get(stage, {})
for command in ("global", "deploy"):
    name = config.get(command, {}).get("parameters", {}).get("stack_name")
    if name:
        print(name)
        sys.exit(0)
sys.exit(f"samconfig.toml has no stack_name for the config environment {stage!r}")
PY
}

if [[ "${1:-}" == url ]]; then
  stack="$(stack_name "${2:?usage: pipeline-deploy.sh url STAGE}")"
  aws cloudformation describe-stacks --stack-name "$stack" \
    --query "Stacks[0].Outputs[?OutputKey=='ApiUrl'].OutputValue" --output text
  exit 0
fi

stage="${1:?usage: pipeline-deploy.sh STAGE s3://BUCKET/builds/COMMIT/packaged.yaml}"
artifact="${2:?usage: pipeline-deploy.sh STAGE s3://BUCKET/builds/COMMIT/packaged.yaml}"
: "${ARTIFACT_BUCKET:?set ARTIFACT_BUCKET (the repository variable AWS_ARTIFACT_BUCKET)}"
: "${CFN_EXECUTION_ROLE_ARN:?set CFN_EXECUTION_ROLE_ARN (the repository variable AWS_CFN_EXECUTION_ROLE_ARN)}"
stack="$(stack_name "$stage")"

mkdir -p "$ROOT/.local"
template="$ROOT/.local/packaged-$stage.yaml"
if ! aws s3 cp --only-show-errors "$artifact" "$template"; then
  echo "::error::no build at $artifact: a version tag must name a commit that main built and deployed to dev"
  exit 1
fi

# A stack still on an older stored layout is upgraded first, by the operator
# (scripts/upgrade.py STAGE: the migration's template states and backfills,
# docs/upgrade.md); deploying the release over it would fail in CloudFormation
# or leave the functions reading indexes the stack does not have.
python3 "$ROOT/scripts/upgrade.py" "$stage" --pending
# dev only: indexes of an unreleased migration that main changed since dev made them, rebuilt (docs/upgrade.md).
if [[ "$stage" == dev ]]; then "$ROOT/.venv/bin/python" "$ROOT/scripts/rebuild-indexes.py" dev --template-file "$template"; fi

# The same build every stage gets; only samconfig.toml's settings for the
# stage differ (its parameters: Stage, the release strategy, alarm actions).
"$SAM" deploy --config-env "$stage" --stack-name "$stack" \
  --template-file "$template" \
  --s3-bucket "$ARTIFACT_BUCKET" --s3-prefix "deploys/$stage" \
  --role-arn "$CFN_EXECUTION_ROLE_ARN" \
  --no-resolve-s3 --no-confirm-changeset --no-fail-on-empty-changeset --no-progressbar
