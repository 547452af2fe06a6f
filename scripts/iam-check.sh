#!/usr/bin/env bash
# `make iam-check`: every AWS call the functions made in the tests, evaluated
# against the IAM policies they get once deployed (gates.iam_check), then
# the check's own test: a policy with one action or one index removed fails it
# (tools/gates/tests/test_iam_check_mutations.py). Uses the last recording (.local/aws-calls,
# written by `make test`) when there is one, so a policy edit is checked in
# seconds; else records first, running the tests with PETSTORE_AWS_CALLS set.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
RECORDING="${PETSTORE_AWS_CALLS:-$ROOT/.local/aws-calls}"
cd "$ROOT"
mkdir -p .local

if ! compgen -G "$RECORDING/*.jsonl" >/dev/null; then
  echo "iam-check: no recording in ${RECORDING#"$ROOT"/}: running the tests to make one"
  scripts/dynamodb-local.sh install
  PETSTORE_AWS_CALLS="$RECORDING" cargo test --workspace
fi
"$VENV/bin/petstore-iam-check" "$RECORDING"
PETSTORE_AWS_CALLS="$RECORDING" "$VENV/bin/pytest" -q tools/gates -m recording
