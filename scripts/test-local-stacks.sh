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
# shellcheck disable=SC2317  # invoked by trap
cleanup() { "$DDB" stop "$A" >/dev/null 2>&1 || true; "$DDB" stop "$B" >/dev/null 2>&1 || true; }
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
echo "local stacks: ok (ports $A and $B started and stopped independently; a busy port refused; an unreachable DynamoDB reported in one line)"
