#!/usr/bin/env bash
# DynamoDB Local for development and tests: install, start, stop, serve.
#
#   scripts/dynamodb-local.sh install          download into .local/dynamodb/ if missing
#   scripts/dynamodb-local.sh start            background, in memory, on $DYNAMODB_PORT (8000)
#   scripts/dynamodb-local.sh stop             stop what `start` started
#   scripts/dynamodb-local.sh status           say whether it runs
#   scripts/dynamodb-local.sh serve PORT PARENT_PID
#                                              foreground on PORT; exits, stopping java,
#                                              as soon as PARENT_PID is gone (used by the
#                                              test harness so no test run leaks a JVM)
#   scripts/dynamodb-local.sh env              print the variables a client needs
#
# The jar comes from the npm package amplify-dynamodb-simulator, which bundles
# DynamoDB Local; npm is the only download channel CI has. The tarball's
# integrity is pinned below. Nothing it installs is committed (.local/ is ignored).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSTALL_DIR="$ROOT/.local/dynamodb"
PID_FILE="$ROOT/.local/dynamodb.pid"
LOG_DIR="$ROOT/.local/logs"
PORT="${DYNAMODB_PORT:-8000}"

PACKAGE="amplify-dynamodb-simulator@2.9.30"
PACKAGE_INTEGRITY="sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ=="

# A small heap and the client compiler start the JVM in about two seconds on
# two cores; override with DYNAMODB_JAVA_OPTS.
JAVA_OPTS="${DYNAMODB_JAVA_OPTS:--Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
READY_TIMEOUT_SECONDS="${DYNAMODB_READY_TIMEOUT:-60}"

log() { echo "dynamodb-local: $*" >&2; }
die() { log "$*"; exit 1; }

installed() { [[ -f "$INSTALL_DIR/DynamoDBLocal.jar" && -d "$INSTALL_DIR/DynamoDBLocal_lib" ]]; }

cmd_install() {
  if installed; then
    return 0
  fi
  command -v npm >/dev/null || die "npm is needed to download DynamoDB Local"
  command -v java >/dev/null || die "java (17 or later) is needed to run DynamoDB Local"
  local tmp
  tmp="$(mktemp -d)"
  if ! download_into "$tmp"; then
    rm -rf "$tmp"
    die "could not install DynamoDB Local"
  fi
  rm -rf "$tmp"
  log "installed into ${INSTALL_DIR#"$ROOT"/}"
}

# `set -e` does not apply inside a function called from `if`, hence the `|| return 1`s.
download_into() {
  local tmp="$1" tarball actual
  log "downloading $PACKAGE"
  (cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null) || return 1
  tarball="$(ls "$tmp"/*.tgz)" || return 1
  actual="sha512-$(node -e 'const c=require("crypto"),f=require("fs");process.stdout.write(c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$tarball")" || return 1
  if [[ "$actual" != "$PACKAGE_INTEGRITY" ]]; then
    log "integrity mismatch for $PACKAGE: got $actual"
    return 1
  fi
  tar -xzf "$tarball" -C "$tmp" package/emulator || return 1
  mkdir -p "$(dirname "$INSTALL_DIR")" || return 1
  rm -rf "$INSTALL_DIR.partial" "$INSTALL_DIR" || return 1
  # Copy beside the target (tmp may be another file system), then rename:
  # an interrupted install never looks installed.
  mv "$tmp/package/emulator" "$INSTALL_DIR.partial" && mv "$INSTALL_DIR.partial" "$INSTALL_DIR"
}

# True when something answers HTTP on the port (DynamoDB Local answers any
# request, signed or not, once it is serving). Pure bash: no curl needed.
answers() {
  local port="$1" line=""
  (
    exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
    printf 'POST / HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}' "$port" >&3
    IFS= read -r -t 2 line <&3 || exit 1
    [[ "$line" == HTTP/* ]]
  ) 2>/dev/null
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Waits until the port answers, or fails if the process dies or time runs out.
wait_ready() {
  local port="$1" pid="$2" logfile="$3" waited=0
  until answers "$port"; do
    if ! alive "$pid"; then
      log "DynamoDB Local exited during start-up; its log:"
      tail -n 30 "$logfile" >&2 || true
      return 1
    fi
    if ((waited >= READY_TIMEOUT_SECONDS * 10)); then
      log "DynamoDB Local did not answer on port $port within ${READY_TIMEOUT_SECONDS}s"
      return 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
}

# Starts java in the background in $INSTALL_DIR; sets JAVA_PID.
launch() {
  local port="$1" logfile="$2"
  installed || die "DynamoDB Local is not installed: run 'make test' or 'scripts/dynamodb-local.sh install'"
  mkdir -p "$(dirname "$logfile")"
  # shellcheck disable=SC2086  # JAVA_OPTS is a list of words
  (cd "$INSTALL_DIR" && exec java $JAVA_OPTS -Djava.library.path=./DynamoDBLocal_lib \
    -jar DynamoDBLocal.jar -inMemory -sharedDb -disableTelemetry -port "$port") \
    >"$logfile" 2>&1 </dev/null &
  JAVA_PID=$!
}

# kill -0 alone would count a zombie (exited, not yet reaped) as running.
alive() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  stat="${stat##*) }"
  [[ "${stat%% *}" != Z ]]
}

running_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  alive "$pid" || return 1
  echo "$pid"
}

cmd_start() {
  local pid
  if pid="$(running_pid)"; then
    log "already running (pid $pid) on port $(cat "$PID_FILE.port" 2>/dev/null || echo "$PORT")"
    return 0
  fi
  rm -f "$PID_FILE" "$PID_FILE.port"
  port_in_use "$PORT" && die "port $PORT is taken by another process; set DYNAMODB_PORT"
  cmd_install
  local logfile="$LOG_DIR/dynamodb-$PORT.log"
  launch "$PORT" "$logfile"
  echo "$JAVA_PID" >"$PID_FILE"
  echo "$PORT" >"$PID_FILE.port"
  if ! wait_ready "$PORT" "$JAVA_PID" "$logfile"; then
    cmd_stop
    exit 1
  fi
  log "listening on http://127.0.0.1:$PORT (pid $JAVA_PID, log ${logfile#"$ROOT"/})"
}

stop_pid() {
  local pid="$1" i
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 1 50); do
    alive "$pid" || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    stop_pid "$pid"
    log "stopped (pid $pid)"
  else
    log "not running"
  fi
  rm -f "$PID_FILE" "$PID_FILE.port"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "running (pid $pid) on port $(cat "$PID_FILE.port" 2>/dev/null || echo "$PORT")"
  else
    echo "not running"
    return 1
  fi
}

# Foreground mode for the test harness. Prints "ready <port>" on stdout once
# DynamoDB Local answers, then watches PARENT_PID: when the test binary ends,
# however it ends, java goes with it.
cmd_serve() {
  local port="${1:?usage: serve PORT PARENT_PID}" parent="${2:?usage: serve PORT PARENT_PID}"
  # Globals, not locals: the EXIT trap runs after this function has returned.
  SERVE_LOG="$LOG_DIR/dynamodb-$port.log"
  JAVA_PID=""
  # shellcheck disable=SC2317  # invoked by trap
  cleanup() {
    [[ -n "$JAVA_PID" ]] && stop_pid "$JAVA_PID"
    # One log per random port would pile up; keep it only when asked.
    [[ -n "${DYNAMODB_KEEP_LOGS:-}" ]] || rm -f "$SERVE_LOG"
  }
  trap cleanup EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  launch "$port" "$SERVE_LOG"
  wait_ready "$port" "$JAVA_PID" "$SERVE_LOG" || exit 1
  echo "ready $port"
  while alive "$parent" && alive "$JAVA_PID"; do
    sleep 0.5
  done
}

cmd_env() {
  cat <<EOF
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$PORT
export AWS_ACCESS_KEY_ID=local
export AWS_SECRET_ACCESS_KEY=local
export AWS_REGION=us-east-1
EOF
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  serve) shift; cmd_serve "$@" ;;
  env) cmd_env ;;
  *)
    sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
