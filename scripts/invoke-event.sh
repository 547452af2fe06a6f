#!/usr/bin/env bash
# `make invoke EVENT=events/<name>.json`: sends a sample event to its function
# on the running `make run-lambda` stack and prints the function's response.
#
#   PORT=3000 DYNAMODB_PORT=8000 scripts/invoke-event.sh [--no-build] EVENT
#
# The function is the one events/expected.json names for the event.
# `petstore-local event` makes the records the event names, fresh each time
# (so an event that deletes its pet works every time), and fills in their ids;
# `cargo lambda invoke` sends the result to the function on PORT, as a Lambda
# invocation. The event's key is the one `make run-lambda` stored.
#   --no-build  petstore-local is built already (scripts/test-run-lambda.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PORT="${PORT:-3000}"
DYNAMODB_PORT="${DYNAMODB_PORT:-8000}"

die() { echo "invoke: $*" >&2; exit 1; }

build=1
if [[ "${1:-}" == --no-build ]]; then
  build=""
  shift
fi
event="${1:-}"
[[ -n "$event" ]] || die "usage: make invoke EVENT=events/<name>.json"
[[ -f "$event" ]] || die "no such event file: $event"
[[ -x "$VENV/bin/cargo-lambda" ]] || die "$VENV has no cargo-lambda: run 'make venv'"

function="$(python3 - "$ROOT/events/expected.json" "$(basename "$event")" <<'PY'
import json, sys
entry = json.load(open(sys.argv[1])).get(sys.argv[2])
print(entry["function"] if entry else "")
PY
)"
[[ -n "$function" ]] || die "events/expected.json names no function for $(basename "$event")"

export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DYNAMODB_PORT"
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
[[ -z "$build" ]] || (cd "$ROOT" && cargo build --quiet --bin petstore-local)
ready="$(mktemp)"
trap 'rm -f "$ready"' EXIT
"${CARGO_TARGET_DIR:-$ROOT/target}/debug/petstore-local" event "$event" >"$ready"
"$VENV/bin/cargo-lambda" lambda invoke "$function" --data-file "$ready" \
  --invoke-address 127.0.0.1 --invoke-port "$PORT" --output-format json
