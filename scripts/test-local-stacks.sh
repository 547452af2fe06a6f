#!/usr/bin/env bash
# Checks that local stacks never touch each other (`make test` runs it): two
# DynamoDB Locals on two ports start and stop independently, a second start on
# a busy port is refused without disturbing the first, and a stop stops only
# its own port's process; and petstore-local without a DynamoDB says so in one
# plain line. Stops whatever it started, however it exits.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DDB="$ROOT/scripts/dynamodb-local.sh"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
A="$(free_port)"
B="$(free_port)"
while [[ "$B" == "$A" ]]; do B="$(free_port)"; done
WORK="$(mktemp -d)"
SERVER=""
# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  [[ -n "$SERVER" ]] && kill "$SERVER" 2>/dev/null
  "$DDB" stop "$A" >/dev/null 2>&1 || true; "$DDB" stop "$B" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() { echo "local stacks: FAILED: $*" >&2; exit 1; }

"$DDB" start "$A" 2>/dev/null || fail "could not start on $A"
if "$DDB" start "$A" 2>/tmp/local-stacks-$$.err; then
  fail "a second start on busy port $A was not refused"
fi
grep -q "already running" /tmp/local-stacks-$$.err || fail "the refusal does not say the port is taken: $(cat /tmp/local-stacks-$$.err)"
rm -f /tmp/local-stacks-$$.err
"$DDB" status "$A" >/dev/null 2>&1 || fail "the refused second start stopped the first stack on $A"
"$DDB" start "$B" 2>/dev/null || fail "could not start a second stack on $B"
"$DDB" stop "$A" 2>/dev/null || fail "could not stop the stack on $A"
"$DDB" status "$A" >/dev/null 2>&1 && fail "the stack on $A still runs after its stop"
"$DDB" status "$B" >/dev/null 2>&1 || fail "stopping $A stopped the stack on $B"
"$DDB" stop "$B" 2>/dev/null || fail "could not stop the stack on $B"

# A server that cannot reach its DynamoDB says so in one plain line.
(cd "$ROOT" && cargo build --quiet --bin petstore-local)
dead="$(free_port)"
if out="$(AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$dead" PORT="$(free_port)" RUST_LOG=off \
  timeout 120 "${CARGO_TARGET_DIR:-$ROOT/target}/debug/petstore-local" 2>&1 >/dev/null)"; then
  fail "petstore-local started without a DynamoDB"
fi
[[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 && "$out" == *"cannot reach DynamoDB at http://127.0.0.1:$dead"* ]] \
  || fail "petstore-local without a DynamoDB did not say so in one plain line: $out"
# Eight processes started at once on one fresh DynamoDB Local all come up,
# round after round (fresh tables each round): petstore-local's start (its
# tables, the sample events' key, the demo keys) and petstore-admin's (its
# tables), racing each other to create the same tables and keys.
(cd "$ROOT" && cargo build --quiet --bin petstore-local --bin petstore-admin)
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
"$DDB" start "$A" 2>/dev/null || fail "could not start on $A again"
export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$A" RUST_LOG=off
ROUNDS=5
for round in $(seq "$ROUNDS"); do
  pids=()
  for n in 1 2 3 4; do
    TABLE_NAME="race-$round" RATE_LIMIT_TABLE_NAME="race-$round-limits" \
      "$BIN/petstore-local" setup >"$WORK/local-$n" 2>&1 & pids+=("$!:local-$n")
    TABLE_NAME="race-$round" RATE_LIMIT_TABLE_NAME="race-$round-limits" \
      "$BIN/petstore-admin" keys list >"$WORK/admin-$n" 2>&1 & pids+=("$!:admin-$n")
  done
  for started in "${pids[@]}"; do
    wait "${started%%:*}" || fail "round $round: ${started#*:} of 8 started at once failed: $(tail -3 "$WORK/${started#*:}")"
  done
done

# A DynamoDB failure names its operation, its table, and AWS's code and
# message: a missing table, in petstore-admin and in the local server.
if out="$("$BIN/petstore-admin" data check --table no-such-table 2>&1 >/dev/null)"; then
  fail "petstore-admin checked a table that does not exist"
fi
[[ "$out" == *"DynamoDB Scan on table no-such-table failed: ResourceNotFoundException: "* ]] \
  || fail "petstore-admin's failure does not name the operation, table, code and message: $out"
port="$(free_port)"
TABLE_NAME=vanishing RATE_LIMIT_TABLE_NAME=vanishing-limits PORT="$port" RUST_LOG=warn \
  "$BIN/petstore-local" >"$WORK/server" 2>&1 & SERVER=$!
for _ in $(seq 600); do grep -q "listening on" "$WORK/server" && break; sleep 0.1; done
grep -q "listening on" "$WORK/server" || fail "petstore-local did not start: $(cat "$WORK/server")"
AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_DEFAULT_REGION=us-east-1 "${VENV:-$ROOT/.venv}/bin/python" -c \
  "import boto3, os; boto3.client('dynamodb', endpoint_url=os.environ['AWS_ENDPOINT_URL_DYNAMODB']).delete_table(TableName='vanishing')"
# A key of the issued form is looked up in the data table, which is gone.
status="$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: psk_$(printf 'k%.0s' $(seq 43))" "http://127.0.0.1:$port/pets")"
[[ "$status" == 503 ]] || fail "a key look-up on a missing table answered $status, not 503"
grep -q "DynamoDB GetItem on table vanishing failed: ResourceNotFoundException: " "$WORK/server" \
  || fail "petstore-local's log does not name the operation, table, code and message: $(tail -5 "$WORK/server")"
kill "$SERVER" 2>/dev/null; SERVER=""

echo "local stacks: ok (ports $A and $B started and stopped independently; a busy port refused; an unreachable DynamoDB reported in one line; $ROUNDS rounds of 8 processes started at once on fresh tables; a missing table named in petstore-admin and petstore-local)"
