#!/usr/bin/env bash
# The pre-traffic check (functions/pretraffic) against the real function
# binaries, as the CodeDeploy hook sends a new version its requests: through
# Lambda's Invoke API, which `cargo lambda watch` serves.
#
#   scripts/test-pretraffic.sh INVOKE_URL
#
# 1. INVOKE_URL is a running `make run-lambda` stack (test-run-lambda.sh
#    passes its own): every function passes every check (petstore-smoke
#    --lambda-endpoint, the hook's code path without CodeDeploy), the keyed
#    one included: petstore-smoke puts its own short-lived key in the
#    stack's DynamoDB Local (AWS_ENDPOINT_URL_DYNAMODB, else DYNAMODB_PORT's,
#    as test-run-lambda.sh exports it), as the hook does in the data table.
# 2. A version that must fail it: the same binaries under a second `cargo
#    lambda watch` whose DynamoDB is unreachable (a port nothing listens
#    on). The keyless GET /pets and GET /store/inventory need the counter
#    table and the keyed GET /store/orders the key and the owner index, so
#    their checks fail, and petstore-smoke exits 1 naming them.
# 3. A version that cannot read the stack's indexes: the same binaries on
#    the stack's own DynamoDB Local with DATA_LAYOUT=1 (the last release's
#    layout; the stack's table is this release's, which has no GSI4). Every
#    keyless check passes it; the keyed one gets 500, and only it fails.
# Stops what it started (the second watch and its instances, by a variable
# only they carry), however it exits.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
INVOKE_URL="${1:?usage: test-pretraffic.sh INVOKE_URL}"
LOG="$ROOT/.local/logs/test-pretraffic.log"
RUN_ID="pretraffic-$$-$RANDOM$RANDOM"
mkdir -p "$(dirname "$LOG")"
cd "$ROOT"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail() { echo "pretraffic: FAILED: $*" >&2; exit 1; }
# The second watch's processes (grep fails when there are none left: no error).
members() { { grep -lzx "PETSTORE_RUN_LAMBDA=$RUN_ID" /proc/[0-9]*/environ 2>/dev/null || true; } | sed 's|/proc/||; s|/environ||' | tr '\n' ' '; }

WATCH_PID=""
# The second watch, if one runs, and its instances.
stop_watch() {
  local left
  [[ -n "$WATCH_PID" ]] || return 0
  kill -INT "$WATCH_PID" 2>/dev/null || true
  sleep 1
  left="$(members)"
  # shellcheck disable=SC2086  # a list of pids
  if [[ -n "$left" ]]; then kill -KILL $left 2>/dev/null || true; fi
  # Its status is the interrupt's, not a failure of this script.
  wait "$WATCH_PID" 2>/dev/null || true
  WATCH_PID=""
}
# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local status=$?
  set +e
  stop_watch
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cargo build --quiet --bin petstore-smoke
# The events function is no route's, so run-lambda did not build it.
cargo build --quiet --bin events
SMOKE="$ROOT/target/debug/petstore-smoke"
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
# Where petstore-smoke puts the keyed check's key: the healthy stack's table.
export AWS_ENDPOINT_URL_DYNAMODB="${AWS_ENDPOINT_URL_DYNAMODB:-http://127.0.0.1:${DYNAMODB_PORT:?set AWS_ENDPOINT_URL_DYNAMODB or DYNAMODB_PORT}}"

"$SMOKE" --lambda-endpoint "$INVOKE_URL" | tee -a "$LOG" || fail "a healthy stack failed the pre-traffic check"

# A second `cargo lambda watch` of the same binaries with the environment
# "$@" (NAME=value ...) on a free port, once it listens; its address in WATCHED.
start_watch() {
  local port
  port="$(free_port)"
  env PETSTORE_RUN_LAMBDA="$RUN_ID" "$@" \
    setsid "$VENV/bin/cargo-lambda" lambda watch --ignore-changes \
    --invoke-address 127.0.0.1 --invoke-port "$port" --disable-cors >>"$LOG" 2>&1 &
  WATCH_PID=$!
  for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$WATCH_PID" 2>/dev/null || fail "the second cargo lambda watch exited: $(tail -n 5 "$LOG")"
    sleep 0.1
  done
  WATCHED="http://127.0.0.1:$port"
}

# What petstore-smoke says of the watched version's pets and store; exit 1 required.
failing_checks() {
  local broken status
  set +e
  broken="$("$SMOKE" --lambda-endpoint "$WATCHED" --only pets,store)"
  status=$?
  set -e
  echo "$broken" >>"$LOG"
  ((status == 1)) || fail "$1 passed the pre-traffic check (exit $status): $broken"
  echo "$broken"
}

# The failing version: no DynamoDB behind it.
start_watch AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$(free_port)"
broken="$(failing_checks "a version without its DynamoDB")"
stop_watch
grep -q '^FAIL  pets: GET /pets without a key' <<<"$broken" \
  && grep -q '^FAIL  store: GET /store/inventory without a key' <<<"$broken" \
  && grep -q '^FAIL  store: GET /store/orders?limit=1 with the check' <<<"$broken" \
  || fail "the failing version's checks are not the ones named: $broken"
echo "pretraffic: a healthy stack passes every check; a version without its DynamoDB fails them:"
grep '^FAIL' <<<"$broken" | sed 's/^/  /'

# The version that cannot read the stack's indexes: only the keyed check fails it.
start_watch DATA_LAYOUT=1
unreadable="$(failing_checks "a version of another layout than its table's")"
stop_watch
[[ "$(grep -c '^FAIL' <<<"$unreadable")" == 1 ]] \
  && grep -q '^FAIL  store: GET /store/orders?limit=1 with the check.*status 500' <<<"$unreadable" \
  || fail "a version that cannot read its indexes did not fail the keyed check alone: $unreadable"
echo "pretraffic: a version that cannot read the stack's indexes (DATA_LAYOUT=1) passes every keyless check and fails the keyed one:"
grep '^FAIL' <<<"$unreadable" | sed 's/^/  /'
