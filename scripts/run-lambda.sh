#!/usr/bin/env bash
# `make run-lambda`: the whole API through the real function binaries, as
# Lambda runs them, on http://127.0.0.1:$PORT.
#
#   PORT=3000 DYNAMODB_PORT=8000 CONCURRENCY=4 scripts/run-lambda.sh [WATCH_ARGS...]
#
# 1. DynamoDB Local on DYNAMODB_PORT (scripts/dynamodb-local.sh start: refused
#    if anything answers there already);
# 2. `petstore-local setup`: the tables, the sample events' key, the demo keys
#    (printed);
# 3. the functions the router names, built as `cargo lambda watch` runs them
#    (debug), so the first request does not wait for a compile;
# 4. gates.run_lambda_aws: EventBridge and SQS (moto) with the webhook
#    queues and template.yaml's rule, and the event source mappings Lambda
#    would run (the table's stream to `events`, both queues to `webhooks`),
#    so a committed change reaches a webhook receiver through the real
#    binaries; the functions get its endpoints in their environment, and
#    WEBHOOKS_ALLOW_LOOPBACK=1, as `make run` (receivers on this machine);
# 5. `cargo lambda watch` on PORT: the workspace's router (Cargo.toml,
#    [workspace.metadata.lambda.watch.router]) sends each path to the function
#    template.yaml sends it to; up to CONCURRENCY instances of each function,
#    each serving one request at a time. WATCH_ARGS go to it (e.g.
#    --ignore-changes; by default it rebuilds a function when its code changes).
#    `--disable-cors` turns off its own CORS layer, which would allow every
#    origin: the functions answer browsers themselves, from the origins
#    ALLOWED_ORIGINS lists (comma-separated; empty, the default: none), which
#    every instance inherits from this script's environment, as API Gateway
#    answers from the template's AllowedOrigins (docs/local.md).
#
# Ctrl-C (or SIGTERM) stops what this run started and nothing else.
# `cargo lambda watch` runs in a session of its own (the terminal's Ctrl-C
# reaches this script, which stops it in order) with a variable no other
# process has, PETSTORE_RUN_LAMBDA=<this run's id>, which every function
# instance inherits (each runs in a session of its own, and outlives its
# parent if that is killed). It is interrupted; whatever still carries the
# id after a grace period is killed; then this run's DynamoDB Local is
# stopped. While it runs, .local/run-lambda-PORT.id holds the id.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${PORT:-3000}"
DYNAMODB_PORT="${DYNAMODB_PORT:-8000}"
CONCURRENCY="${CONCURRENCY:-4}"
VENV="${VENV:-$ROOT/.venv}"
DDB="$ROOT/scripts/dynamodb-local.sh"
ID_FILE="$ROOT/.local/run-lambda-$PORT.id"
AWS_ENV="$ROOT/.local/run-lambda-$PORT.aws-env"
RUN_ID="$PORT-$$-$RANDOM$RANDOM"
GRACE_SECONDS=10

log() { echo "run-lambda: $*" >&2; }
die() { log "$*"; exit 1; }

[[ -x "$VENV/bin/cargo-lambda" ]] || die "$VENV has no cargo-lambda: run 'make venv'"
[[ "$CONCURRENCY" =~ ^[1-9][0-9]*$ ]] || die "CONCURRENCY must be a positive number, not '$CONCURRENCY'"
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  die "port $PORT is already in use: nothing started; choose another PORT"
fi

# The processes carrying this run's id: cargo lambda watch and whatever it
# started. (The variable is set for cargo lambda watch alone, never exported
# here, so grep does not find itself.)
members() {
  local file pids=()
  for file in $(grep -lzx "PETSTORE_RUN_LAMBDA=$RUN_ID" /proc/[0-9]*/environ 2>/dev/null); do
    file="${file#/proc/}"
    pids+=("${file%/environ}")
  done
  echo "${pids[*]}"
}

WATCH_PID="" DYNAMODB_STARTED="" AWS_PID=""
# shellcheck disable=SC2317  # invoked by trap
stop_all() {
  local status=$? _ left
  set +e
  if [[ -n "$WATCH_PID" ]]; then
    kill -INT "$WATCH_PID" 2>/dev/null
    for _ in $(seq 1 $((GRACE_SECONDS * 2))); do
      [[ -z "$(members)" ]] && break
      sleep 0.5
    done
    left="$(members)"
    if [[ -n "$left" ]]; then
      log "killing what cargo lambda watch left running: $left"
      # shellcheck disable=SC2086  # a list of pids
      kill -KILL $left 2>/dev/null
    fi
    wait "$WATCH_PID" 2>/dev/null
    rm -f "$ID_FILE"
    log "cargo lambda watch and its function instances stopped"
  fi
  if [[ -n "$AWS_PID" ]]; then
    kill -TERM "$AWS_PID" 2>/dev/null
    wait "$AWS_PID" 2>/dev/null
  fi
  rm -f "$AWS_ENV"
  [[ -n "$DYNAMODB_STARTED" ]] && "$DDB" stop "$DYNAMODB_PORT"
  exit "$status"
}
trap 'exit 130' INT
trap 'exit 143' TERM

# The stop trap is set only once `start` has succeeded: a start refused
# because the port is taken must not stop the DynamoDB Local that holds it.
"$DDB" start "$DYNAMODB_PORT"
DYNAMODB_STARTED=1
trap stop_all EXIT

export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DYNAMODB_PORT"
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
cd "$ROOT"
cargo run --quiet --bin petstore-local -- setup

# The functions the router sends requests to (not, say, a stream consumer).
mapfile -t functions < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
router = json.load(sys.stdin)["metadata"]["lambda"]["watch"]["router"]
names = set()
for target in router.values():
    names.update([target] if isinstance(target, str) else [r["function"] for r in target])
print("\n".join(sorted(names)))')
log "building ${functions[*]} (debug, as cargo lambda watch runs them)"
# `--bin` at the workspace root selects as `cargo run --bin` does: the same build.
cargo build --quiet "${functions[@]/#/--bin=}"

mkdir -p "$(dirname "$ID_FILE")"
rm -f "$AWS_ENV"
"$VENV/bin/petstore-run-lambda-aws" --invoke-port "$PORT" \
  --dynamodb-port "$DYNAMODB_PORT" --env-file "$AWS_ENV" &
AWS_PID=$!
for _ in $(seq 1 300); do
  [[ -s "$AWS_ENV" ]] && break
  kill -0 "$AWS_PID" 2>/dev/null || die "petstore-run-lambda-aws exited"
  sleep 0.1
done
[[ -s "$AWS_ENV" ]] || die "petstore-run-lambda-aws did not start"
while IFS='=' read -r name value; do
  export "$name=$value"
done <"$AWS_ENV"
export WEBHOOKS_ALLOW_LOOPBACK=1

echo "$RUN_ID" >"$ID_FILE"
PETSTORE_RUN_LAMBDA="$RUN_ID" setsid "$VENV/bin/cargo-lambda" lambda watch \
  --invoke-address 127.0.0.1 --invoke-port "$PORT" --concurrency "$CONCURRENCY" --disable-cors "$@" &
WATCH_PID=$!
for _ in $(seq 1 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 "$WATCH_PID" 2>/dev/null || die "cargo lambda watch exited"
  sleep 0.1
done
log "Pet store API on http://127.0.0.1:$PORT: ${functions[*]} behind cargo lambda watch, up to $CONCURRENCY instances each (DynamoDB at $AWS_ENDPOINT_URL_DYNAMODB); Ctrl-C stops it"
[[ -n "${ALLOWED_ORIGINS:-}" ]] && log "browsers may call it from: $ALLOWED_ORIGINS"
log "send a sample event: make invoke EVENT=events/pets-list.json PORT=$PORT DYNAMODB_PORT=$DYNAMODB_PORT"
wait "$WATCH_PID"
