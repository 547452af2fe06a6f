#!/usr/bin/env bash
# `make test`'s run through the real function binaries: starts `make
# run-lambda`'s stack (scripts/run-lambda.sh) on free ports, and checks that
#   - several instances of each function serve it (at most CONCURRENCY);
#   - a second run on its PORT or DYNAMODB_PORT is refused, leaving it alone;
#   - with ALLOWED_ORIGINS set, as `make run-lambda ALLOWED_ORIGINS=...`
#     passes it, the functions answer a listed origin's preflight without a
#     key, expose the contract's headers to it, and show another origin no
#     CORS (tests/cors.rs checks the rules on the router);
#   - every sample event in events/expected.json, sent with `make invoke`'s
#     script (scripts/invoke-event.sh: cargo lambda invoke), gets its status;
#   - the tests in tests/lambda.rs pass through it: a flow across both
#     functions, unknown paths and methods answered as deployed, the exact
#     limits, the exact stock and one Idempotency-Key raced across instances;
#   - an order's webhook reaches a receiver on this machine through the
#     real events and webhooks binaries (gates.check_webhook_delivery);
#   - the pre-traffic check passes through it, and fails a version without
#     its DynamoDB and one that cannot read its indexes (DATA_LAYOUT=1:
#     the keyed check alone) (scripts/test-pretraffic.sh);
#   - an interrupt (Ctrl-C) stops the functions, cargo lambda watch and this
#     run's DynamoDB Local, and frees the port.
# Stops whatever it started, however it exits. Timings go to stdout, never
# into a verdict.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
DDB="$ROOT/scripts/dynamodb-local.sh"
LOG="$ROOT/.local/logs/test-run-lambda.log"
CONCURRENCY=4
started=$SECONDS

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail() { echo "run-lambda: FAILED: $*" >&2; echo "(the stack's log: ${LOG#"$ROOT"/})" >&2; exit 1; }
step() { echo "run-lambda: $* ($((SECONDS - started)) s)"; }

PORT="$(free_port)"
DYNAMODB_PORT="$(free_port)"
while [[ "$DYNAMODB_PORT" == "$PORT" ]]; do DYNAMODB_PORT="$(free_port)"; done
export PORT DYNAMODB_PORT
BASE_URL="http://127.0.0.1:$PORT"
# The origin whose pages may call this stack (the functions inherit it).
CORS_ORIGIN="https://shop.example.com"
export ALLOWED_ORIGINS="$CORS_ORIGIN"
ID_FILE="$ROOT/.local/run-lambda-$PORT.id"
# Webhook retries after 1 s, not the contract's 5 s, 5 min, ... (the functions inherit it).
export WEBHOOK_RETRY_SCHEDULE="1,1,1"

mkdir -p "$(dirname "$LOG")"
STACK_PID=""
# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local status=$?
  set +e
  if [[ -n "$STACK_PID" ]] && kill -0 "$STACK_PID" 2>/dev/null; then
    kill -TERM "$STACK_PID"
    wait "$STACK_PID"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The stack, as `make run-lambda` starts it; no rebuilds on file changes. In
# a process group of its own (job control on), as in a terminal: a
# background job of a script would ignore SIGINT. With SIGINT's default
# handling restored (env --default-signal): when `make test` itself runs in
# the background or under nohup, it inherits SIGINT ignored, and a shell
# cannot trap a signal ignored when it started, so the Ctrl-C below would
# never reach the stack.
set -m
CONCURRENCY=$CONCURRENCY env --default-signal=INT "$ROOT/scripts/run-lambda.sh" --ignore-changes >"$LOG" 2>&1 &
STACK_PID=$!
set +m
until curl -fsS -o /dev/null "$BASE_URL/openapi.json" 2>/dev/null; do
  kill -0 "$STACK_PID" 2>/dev/null || fail "the stack exited during start-up: $(tail -n 20 "$LOG")"
  ((SECONDS - started < 900)) || fail "the stack did not answer on $BASE_URL"
  sleep 0.5
done
RUN_ID="$(cat "$ID_FILE")"
step "stack up on $BASE_URL (DynamoDB Local on $DYNAMODB_PORT)"

# Live instances of function $1 of this stack (they carry its run id).
instances() {
  local file count=0
  for file in $(grep -lzx "PETSTORE_RUN_LAMBDA=$RUN_ID" /proc/[0-9]*/environ 2>/dev/null); do
    [[ "$(cat "${file%/environ}/comm" 2>/dev/null)" == "$1" ]] && count=$((count + 1))
  done
  echo "$count"
}

# Warm several instances of each function: bursts of requests at both.
KEY="psk_events-demo-key_published-not-a-secret-0000"
for _ in $(seq 1 30); do
  (($(instances pets) >= 2 && $(instances store) >= 2)) && break
  burst=()
  for path in /categories /store/orders; do
    for _ in $(seq 1 16); do
      curl -fsS -o /dev/null -H "x-api-key: $KEY" "$BASE_URL$path" &
      burst+=($!)
    done
  done
  wait "${burst[@]}" || true
done
step "warm: $(instances pets) pets and $(instances store) store instances"
(($(instances pets) >= 2 && $(instances store) >= 2)) || fail "fewer than 2 instances of a function after the warm-up"

# A second run on the same PORT, or on the same DYNAMODB_PORT, is refused and
# leaves this one alone.
if "$ROOT/scripts/run-lambda.sh" >/dev/null 2>&1; then
  fail "a second run-lambda on busy port $PORT was not refused"
fi
if PORT="$(free_port)" "$ROOT/scripts/run-lambda.sh" >/dev/null 2>&1; then
  fail "a second run-lambda on busy DynamoDB port $DYNAMODB_PORT was not refused"
fi
"$DDB" status "$DYNAMODB_PORT" >/dev/null || fail "a refused second run stopped this run's DynamoDB Local"
# cargo lambda watch answers a rare 500 ("connection was not ready") while
# it recycles an instance: the stack is judged on a few tries, not one.
curl -fsS --retry 5 --retry-all-errors --retry-delay 1 -o /dev/null "$BASE_URL/openapi.json" \
  || fail "a refused second run stopped this stack"
step "a second run on a busy PORT or DYNAMODB_PORT is refused, this one untouched"

# Browsers: a preflight from the listed origin is the function's 200 with the
# CORS headers, keyless; a read from it exposes the rate-limit headers; another
# origin's preflight gets no CORS header (and the keyless 401 of any OPTIONS).
# The header dumps (curl -D -) are lower-cased for grep.
preflight() {
  curl -sS --retry 5 --retry-all-errors --retry-delay 1 -o /dev/null -D - -X OPTIONS -H "Origin: $1" \
    -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: x-api-key,content-type' \
    "$BASE_URL/store/orders" | tr -d '\r' | tr '[:upper:]' '[:lower:]'
}
listed="$(preflight "$CORS_ORIGIN")"
grep -q '^http/1.1 200' <<<"$listed" && grep -qx "access-control-allow-origin: $CORS_ORIGIN" <<<"$listed" \
  && grep -q '^access-control-allow-headers:.*x-api-key' <<<"$listed" && grep -q '^access-control-allow-methods:.*post' <<<"$listed" \
  || fail "the listed origin's preflight through the functions: $listed"
read_headers="$(curl -sS --retry 5 --retry-all-errors --retry-delay 1 -o /dev/null -D - -H "Origin: $CORS_ORIGIN" -H "x-api-key: $KEY" \
  "$BASE_URL/categories" | tr -d '\r' | tr '[:upper:]' '[:lower:]')"
grep -qx "access-control-allow-origin: $CORS_ORIGIN" <<<"$read_headers" \
  && grep -q '^access-control-expose-headers:.*x-ratelimit-remaining' <<<"$read_headers" \
  || fail "a read from the listed origin through the functions: $read_headers"
other="$(preflight https://elsewhere.example.com)"
grep -q '^http/1.1 401' <<<"$other" && ! grep -q '^access-control-' <<<"$other" \
  || fail "another origin's preflight through the functions: $other"
step "browsers: the listed origin's preflight answered keyless, its read exposes the headers; another origin sees no CORS"

# Every sample event through `make invoke`'s script (4 at a time).
(cd "$ROOT" && cargo build --quiet --bin petstore-local)
check_event() {
  local file="$1" response
  # The answer goes to Python in a file: one argument holds at most 128 KiB
  # (MAX_ARG_STRLEN), and openapi.json is past it.
  response="$(mktemp)"
  "$ROOT/scripts/invoke-event.sh" --no-build "$ROOT/events/$file" >"$response" \
    || { echo "$file: make invoke failed: $(cat "$response")"; rm -f "$response"; return 1; }
  python3 - "$ROOT/events/expected.json" "$file" "$response" <<'PY'
import json, os, sys
expected = json.load(open(sys.argv[1]))[sys.argv[2]]
raw = open(sys.argv[3]).read()
os.remove(sys.argv[3])
try:
    response = json.loads(raw)
except ValueError:
    sys.exit(f"{sys.argv[2]}: not a response: {raw[:2000]}")
problems = []
if response.get("statusCode") != expected["status"]:
    problems.append(f"status {response.get('statusCode')} (expected {expected['status']})")
if "code" in expected:
    body = json.loads(response.get("body") or "{}")
    if body.get("code") != expected["code"]:
        problems.append(f"code {body.get('code')} (expected {expected['code']})")
if problems:
    sys.exit(f"{sys.argv[2]}: {'; '.join(problems)}: {response.get('body')}")
PY
}
export -f check_event
export ROOT
events_failed="$(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))))' "$ROOT/events/expected.json" \
  | xargs -P 4 -I{} bash -c 'check_event "$@"' _ {} 2>&1)" || true
[[ -z "$events_failed" ]] || fail "sample events:
$events_failed"
step "every sample event got its expected status through make invoke"

# The tests that go through the stack. `--workspace --tests` resolves
# features as `cargo test --workspace` does, so the binary make test built is
# reused; `--test api` alone resolves them otherwise and rebuilds the SDK.
(
  cd "$ROOT"
  export PETSTORE_LAMBDA_URL="$BASE_URL" AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DYNAMODB_PORT"
  export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
  cargo test --quiet --workspace --tests lambda:: -- --ignored
) || fail "tests/lambda.rs through the stack"
pets="$(instances pets)" store="$(instances store)"
((pets >= 2 && store >= 2 && pets <= CONCURRENCY && store <= CONCURRENCY)) \
  || fail "$pets pets and $store store instances (expected 2 to $CONCURRENCY each)"
step "tests/lambda.rs passed on $pets pets and $store store instances"

# A webhook through the real binaries: a demo customer's receiver on this
# machine gets its order's order.placed, signed, by way of the stream, the
# events function, EventBridge and both queues (gates.run_lambda_aws);
# it answers 500 first, so the retry (the message's visibility changed to
# the schedule's wait, 1 s here) comes with the same webhook-id.
customer_key="$(awk '$1 == "customer" && $2 == "pro" { print $3; exit }' "$LOG")"
[[ -n "$customer_key" ]] || fail "no demo customer key in the stack's log"
webhook="$("$VENV/bin/petstore-check-webhook-delivery" --base-url "$BASE_URL" \
  --staff-key "$KEY" --customer-key "$customer_key" --fail-first 1)" || fail "a webhook through the real binaries"
step "webhooks: $webhook"

# The pre-traffic check through Lambda's Invoke API, as the CodeDeploy hook
# sends a new version its requests; and a version that fails it.
"$ROOT/scripts/test-pretraffic.sh" "$BASE_URL" || fail "the pre-traffic check (scripts/test-pretraffic.sh)"
step "the pre-traffic check: the stack passes, a version without DynamoDB fails, one that cannot read its indexes fails the keyed check"

# Ctrl-C, as a terminal sends it (to the foreground process group):
# everything this stack started stops, and only that.
kill -INT -- "-$STACK_PID"
wait "$STACK_PID" || true
STACK_PID=""
for _ in $(seq 1 50); do
  [[ "$(instances pets)$(instances store)" == 00 ]] && break
  sleep 0.1
done
[[ "$(instances pets)$(instances store)" == 00 ]] || fail "function instances outlived the interrupt"
[[ -z "$(grep -lzx "PETSTORE_RUN_LAMBDA=$RUN_ID" /proc/[0-9]*/environ 2>/dev/null)" ]] \
  || fail "cargo lambda watch or a process it started outlived the interrupt"
"$DDB" status "$DYNAMODB_PORT" >/dev/null 2>&1 && fail "DynamoDB Local on $DYNAMODB_PORT outlived the interrupt"
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && fail "port $PORT still answers after the interrupt"
[[ -f "$ID_FILE" ]] && fail "${ID_FILE#"$ROOT"/} outlived the interrupt"
step "ok: the interrupt stopped the functions, cargo lambda watch and DynamoDB Local"
