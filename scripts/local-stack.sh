# shellcheck shell=bash
# The whole API running locally for one script, on free ports: sourced by
# scripts/conformance.sh and scripts/clients.sh, never run on its own.
#
#   source scripts/local-stack.sh
#   stack_start NAME       builds petstore-local and petstore-admin (debug), starts
#                          DynamoDB Local (in memory: every run starts empty) and
#                          petstore-local; sets BASE_URL and exports the AWS_*
#                          variables; logs in .local/logs/NAME-{dynamodb,server}.log
#   KEY="$(stack_key)"     an API key that may call every operation, with limits no
#                          run reaches, so 429s never mask an answer
#
# Whatever stack_start started is stopped when the sourcing script exits,
# however it exits (and DynamoDB Local's `serve` mode also stops java as soon
# as that script's process is gone). Nothing else is touched: a `make run` on
# the default ports can keep running.

STACK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK_VENV="${VENV:-$STACK_ROOT/.venv}"
STACK_LOG_DIR="$STACK_ROOT/.local/logs"
STACK_NAME="" STACK_DYNAMODB_PID="" STACK_SERVER_PID=""

stack_die() { echo "${STACK_NAME:-local-stack}: $*" >&2; exit 1; }

stack_free_port() {
  "$STACK_VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# shellcheck disable=SC2317  # invoked by trap
stack_cleanup() {
  local status=$?
  set +e
  [[ -n "$STACK_SERVER_PID" ]] && kill "$STACK_SERVER_PID" 2>/dev/null && wait "$STACK_SERVER_PID" 2>/dev/null
  # SIGTERM lets the script stop its java on the way out.
  [[ -n "$STACK_DYNAMODB_PID" ]] && kill "$STACK_DYNAMODB_PID" 2>/dev/null && wait "$STACK_DYNAMODB_PID" 2>/dev/null
  # The killed children's statuses are not this run's.
  exit "$status"
}

stack_start() {
  STACK_NAME="${1:?usage: stack_start NAME}"
  [[ -x "$STACK_VENV/bin/python" ]] || stack_die "$STACK_VENV is missing: run 'make venv'"
  trap stack_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  echo "$STACK_NAME: building petstore-local and petstore-admin (debug)" >&2
  (cd "$STACK_ROOT" && cargo build --quiet --bin petstore-local --bin petstore-admin)
  mkdir -p "$STACK_LOG_DIR"

  # DynamoDB Local in the foreground mode the test harness uses: it prints
  # "ready PORT" and stops java as soon as this script's process is gone.
  local dynamodb_log="$STACK_LOG_DIR/$STACK_NAME-dynamodb.log" server_log="$STACK_LOG_DIR/$STACK_NAME-server.log"
  local dynamodb_port ready="" port
  dynamodb_port="$(stack_free_port)"
  exec 3< <("$STACK_ROOT/scripts/dynamodb-local.sh" serve "$dynamodb_port" "$$" 2>>"$dynamodb_log")
  STACK_DYNAMODB_PID=$!
  read -r -t 90 ready <&3 || stack_die "DynamoDB Local did not start (see ${dynamodb_log#"$STACK_ROOT"/})"
  [[ "$ready" == "ready $dynamodb_port" ]] || stack_die "DynamoDB Local said '$ready'"

  export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$dynamodb_port"
  export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
  export TABLE_NAME="$STACK_NAME" RATE_LIMIT_TABLE_NAME="$STACK_NAME-limits"

  port="$(stack_free_port)"
  PORT="$port" "$STACK_ROOT/target/debug/petstore-local" >"$server_log" 2>&1 &
  STACK_SERVER_PID=$!
  BASE_URL="http://127.0.0.1:$port"
  local _
  for _ in $(seq 1 300); do
    curl -fsS -o /dev/null "$BASE_URL/openapi.json" 2>/dev/null && break
    kill -0 "$STACK_SERVER_PID" 2>/dev/null || stack_die "petstore-local exited; its log: $(tail -n 20 "$server_log")"
    sleep 0.1
  done
  curl -fsS -o /dev/null "$BASE_URL/openapi.json" || stack_die "petstore-local does not answer on $BASE_URL"
  echo "$STACK_NAME: service on $BASE_URL, DynamoDB Local on $AWS_ENDPOINT_URL_DYNAMODB" >&2
}

# The one place the local tools' key is made. Every key may do everything
# today; once roles land (API.md, section 4a) catalogue writes and order
# completion need a staff key: add `--role staff` to this line.
stack_key() {
  local key
  key="$("$STACK_ROOT/target/debug/petstore-admin" keys create --plan enterprise --role staff --per-minute 1000000 --per-day 100000000 --name "$STACK_NAME" \
    | "$STACK_VENV/bin/python" -c 'import json,sys; print(json.loads(sys.stdin.readline())["key"])')"
  [[ -n "$key" ]] || stack_die "petstore-admin printed no key"
  echo "$key"
}
