#!/usr/bin/env bash
# Conformance: schemathesis generates requests from openapi.yaml and checks
# every answer of the running service against the document (status codes,
# headers, content types, schemas, no 5xx, auth, stateful links).
#
#   scripts/conformance.sh          (make conformance)
#
# It starts everything it needs on free ports and stops it on exit, however it
# exits: DynamoDB Local (in memory, so every run starts empty), petstore-local
# (debug build), and an API key from petstore-admin with limits high enough
# that the rate limiter stays out of the way. Nothing else is touched: a
# `make run` on the default ports can keep running.
#
# Knobs: CONFORMANCE_MAX_EXAMPLES (20), CONFORMANCE_SEED (fixed),
# CONFORMANCE_WORKERS (1), CONFORMANCE_ARGS (more schemathesis options).
# The server's log is .local/logs/conformance-server.log; the report (JUnit)
# is .local/conformance/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
LOG_DIR="$ROOT/.local/logs"
REPORT_DIR="$ROOT/.local/conformance"
MAX_EXAMPLES="${CONFORMANCE_MAX_EXAMPLES:-20}"
SEED="${CONFORMANCE_SEED:-20260701}"
# One worker: with more, hypothesis builds strategy reprs in threads and
# CPython 3.11.7's ast module fails under that (SystemError: AST constructor
# recursion depth mismatch), an interpreter bug, not a finding.
WORKERS="${CONFORMANCE_WORKERS:-1}"

log() { echo "conformance: $*" >&2; }
die() { log "$*"; exit 1; }

[[ -x "$VENV/bin/schemathesis" ]] || die "$VENV/bin/schemathesis is missing: run 'make venv'"

free_port() { "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

DYNAMODB_PID="" SERVER_PID=""
# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local status=$?
  set +e
  [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  # SIGTERM lets the script stop its java on the way out.
  [[ -n "$DYNAMODB_PID" ]] && kill "$DYNAMODB_PID" 2>/dev/null && wait "$DYNAMODB_PID" 2>/dev/null
  # The killed children's statuses are not this run's.
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building petstore-local and petstore-admin (debug)"
cargo build --quiet -p petstore-local -p petstore-admin

mkdir -p "$LOG_DIR" "$REPORT_DIR"

# DynamoDB Local in the foreground mode the test harness uses: it prints
# "ready PORT" and stops java as soon as this script's process is gone.
DYNAMODB_PORT="$(free_port)"
exec 3< <(scripts/dynamodb-local.sh serve "$DYNAMODB_PORT" "$$" 2>>"$LOG_DIR/conformance-dynamodb.log")
DYNAMODB_PID=$!
read -r -t 90 ready <&3 || die "DynamoDB Local did not start (see $LOG_DIR/conformance-dynamodb.log)"
[[ "$ready" == "ready $DYNAMODB_PORT" ]] || die "DynamoDB Local said '$ready'"

export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DYNAMODB_PORT"
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
export TABLE_NAME=conformance RATE_LIMIT_TABLE_NAME=conformance-limits

PORT="$(free_port)"
PORT="$PORT" target/debug/petstore-local >"$LOG_DIR/conformance-server.log" 2>&1 &
SERVER_PID=$!
BASE_URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 300); do
  curl -fsS -o /dev/null "$BASE_URL/openapi.json" 2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || die "petstore-local exited; its log: $(tail -n 20 "$LOG_DIR/conformance-server.log")"
  sleep 0.1
done
curl -fsS -o /dev/null "$BASE_URL/openapi.json" || die "petstore-local does not answer on $BASE_URL"
log "service on $BASE_URL, DynamoDB Local on $AWS_ENDPOINT_URL_DYNAMODB"

# An enterprise key with limits no run reaches, so 429s never mask an answer.
KEY="$(target/debug/petstore-admin keys create --plan enterprise --per-minute 1000000 --per-day 100000000 --name conformance \
  | "$VENV/bin/python" -c 'import json,sys; print(json.loads(sys.stdin.readline())["key"])')"
[[ -n "$KEY" ]] || die "petstore-admin printed no key"

log "schemathesis: all checks, seed $SEED, at most $MAX_EXAMPLES examples per operation"
# shellcheck disable=SC2086  # CONFORMANCE_ARGS is a list of words
"$VENV/bin/schemathesis" --config-file "$ROOT/scripts/conformance.toml" run openapi.yaml \
  --url "$BASE_URL" \
  --header "X-API-Key: $KEY" \
  --checks all \
  --seed "$SEED" \
  --max-examples "$MAX_EXAMPLES" \
  --workers "$WORKERS" \
  --generation-database none \
  --request-timeout 10 \
  --no-color \
  --report junit --report-dir "$REPORT_DIR" \
  ${CONFORMANCE_ARGS:-}
