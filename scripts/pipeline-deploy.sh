#!/usr/bin/env bash
# The release workflow's deploy steps (.github/workflows/release.yml; docs/releases.md):
#
#   pipeline-deploy.sh STAGE DIR
#       deploy the build in DIR (fetched and checked against the digests
#       recorded at build time by gates.pipeline_artifacts fetch: its
#       packaged.json, the code already in the bucket) to STAGE's stack, with
#       samconfig.toml's parameters for STAGE, through the stage's
#       CloudFormation execution role ($CFN_EXECUTION_ROLE_ARN), every role of
#       the stack inside the stage's permissions boundary
#   pipeline-deploy.sh url STAGE
#       the stage stack's API URL (its ApiUrl output), for the smoke run
#
# Runs with the stage's deploy role's credentials and the AWS CLI alone
# (nothing installed, nothing built here); $ARTIFACT_BUCKET names the bucket
# CloudFormation reads the template from (under deploys/STAGE/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# A config environment's setting from samconfig.toml: stack_name, or the
# deploy parameter_overrides one per line (as `aws cloudformation deploy` takes them).
samconfig() {
  python3 - "$1" "$2" "$ROOT/samconfig.toml" <<'PY'
import shlex, sys, tomllib
stage, what, path = sys.argv[1], sys.argv[2], sys.argv[3]
config = tomllib.load(open(path, "rb")).get(stage, {})
deploy = config.get("deploy", {}).get("parameters", {})
if what == "stack_name":
    name = deploy.get("stack_name") or config.get("global", {}).get("parameters", {}).get("stack_name")
    if not name:
        sys.exit(f"samconfig.toml has no stack_name for the config environment {stage!r}")
    print(name)
else:
    print("\n".join(shlex.split(deploy.get("parameter_overrides", ""))))
PY
}

if [[ "${1:-}" == url ]]; then
  stack="$(samconfig "${2:?usage: pipeline-deploy.sh url STAGE}" stack_name)"
  aws cloudformation describe-stacks --stack-name "$stack" \
    --query "Stacks[0].Outputs[?OutputKey=='ApiUrl'].OutputValue" --output text
  exit 0
fi

stage="${1:?usage: pipeline-deploy.sh STAGE DIR}"
build="${2:?usage: pipeline-deploy.sh STAGE DIR}"
: "${ARTIFACT_BUCKET:?set ARTIFACT_BUCKET (the repository variable AWS_ARTIFACT_BUCKET)}"
: "${CFN_EXECUTION_ROLE_ARN:?set CFN_EXECUTION_ROLE_ARN (the execution role of the stage, a repository variable)}"
: "${AWS_REGION:?set AWS_REGION}"
stack="$(samconfig "$stage" stack_name)"

# A stack still on an older stored layout is upgraded first, by the operator
# (petstore-upgrade STAGE: the migration's template states and backfills,
# docs/upgrade.md); deploying the release over it would fail in CloudFormation
# or leave the functions reading indexes the stack does not have.
# Nothing is installed here: the package runs from its source, on the standard library.
gates="$ROOT/tools/gates/src"
PYTHONPATH="$gates" python3 -m gates.upgrade "$stage" --pending
# dev only: indexes of an unreleased migration that main changed since dev made them, rebuilt (docs/upgrade.md).
# Standard library only (nothing is installed here): the build job decoded
# both templates to JSON, checked against SHA256SUMS by the fetch.
if [[ "$stage" == dev ]]; then
  PYTHONPATH="$gates" python3 -m gates.rebuild_indexes dev --template-file "$build/packaged.json" \
    --released-file "$build/released.json"
fi

# The stage's boundary, as deploy/github-deploy-role.yaml names it.
caller="$(aws sts get-caller-identity --query Arn --output text)"
partition="$(cut -d: -f2 <<<"$caller")"
account="$(cut -d: -f5 <<<"$caller")"
boundary="arn:$partition:iam::$account:policy/$stack-$AWS_REGION-boundary"

mapfile -t parameters < <(samconfig "$stage" parameter_overrides)
# The stack's tag, which CloudFormation puts on every resource that takes
# tags: what tells a stage's distribution and HTTP API (whose ARNs are ids)
# from the other stage's to the execution roles (deploy/github-deploy-role.yaml).
aws cloudformation deploy --stack-name "$stack" \
  --template-file "$build/packaged.json" \
  --s3-bucket "$ARTIFACT_BUCKET" --s3-prefix "deploys/$stage" \
  --role-arn "$CFN_EXECUTION_ROLE_ARN" \
  --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND \
  --parameter-overrides "${parameters[@]}" "PermissionsBoundaryArn=$boundary" \
  --tags "petstore-stack=$stack" \
  --no-fail-on-empty-changeset
