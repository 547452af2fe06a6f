#!/usr/bin/env bash
# Lints template.yaml offline: cfn-lint, then `sam validate --lint` (which also
# runs the SAM transform), then gates.check_dashboard (the dashboard's JSON
# body, which cfn-lint does not look into) and gates.check_versions (every
# parameter a function version carries publishes a new one when it changes). All from .venv (requirements-dev.txt).
#
#   scripts/lint-template.sh [TEMPLATE]      default: template.yaml
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
TEMPLATE="${1:-$ROOT/template.yaml}"

for tool in cfn-lint sam; do
  [[ -x "$VENV/bin/$tool" ]] || { echo "lint-template: $VENV/bin/$tool is missing: run 'make venv'" >&2; exit 1; }
done

# `sam validate` wants a region and credentials even though it calls nothing:
# dummies keep it offline and away from any real account. A throwaway HOME keeps
# it from writing ~/.aws-sam (telemetry id, cache) on the developer's machine.
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=offline AWS_SECRET_ACCESS_KEY=offline
unset AWS_PROFILE AWS_SESSION_TOKEN
export SAM_CLI_TELEMETRY=0
SAM_HOME="$(mktemp -d)"
trap 'rm -rf "$SAM_HOME"' EXIT

echo "cfn-lint $TEMPLATE" >&2
"$VENV/bin/cfn-lint" "$TEMPLATE"
echo "sam validate --lint $TEMPLATE" >&2
HOME="$SAM_HOME" "$VENV/bin/sam" validate --lint --template-file "$TEMPLATE"
echo "check-dashboard $TEMPLATE" >&2
"$VENV/bin/petstore-check-dashboard" "$TEMPLATE"
echo "check-versions $TEMPLATE" >&2
"$VENV/bin/petstore-check-versions" "$TEMPLATE"
