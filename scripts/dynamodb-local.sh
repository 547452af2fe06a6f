#!/usr/bin/env bash
# DynamoDB Local for development and tests: install, start, stop, serve.
#
#   scripts/dynamodb-local.sh install          download into .local/dynamodb/ if missing
#   scripts/dynamodb-local.sh start [PORT]     background, in memory, on PORT ($DYNAMODB_PORT, 8000)
#   scripts/dynamodb-local.sh stop [PORT]      stop what `start` started on that port, nothing else
#   scripts/dynamodb-local.sh status [PORT|--all]
#                                              say whether the port's DynamoDB Local runs
#                                              (exit 1 if not), or list every port's
#   scripts/dynamodb-local.sh serve PORT PARENT_PID
#                                              foreground on PORT; exits, stopping java,
#                                              as soon as PARENT_PID is gone (used by the
#                                              test harness so no test run leaks a JVM)
#   scripts/dynamodb-local.sh env [PORT]       print the variables a client needs
#
# Each port is its own stack: `start` records what it launched in
# .local/dynamodb-PORT.pid (pid and process start time), and `stop` stops only
# the process that file names, and only while it is still that DynamoDB Local
# on that port. `start` and `serve` refuse a port on which anything already
# answers, this script's own DynamoDB Local included, so two `make run`s (or
# `make run` beside `make bench`) never share, or stop, each other's database.
#
# The jar comes from the npm package amplify-dynamodb-simulator, which bundles
# DynamoDB Local; npm is the only download channel CI has. The tarball's
# integrity is pinned below. Nothing it installs is committed (.local/ is ignored).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSTALL_DIR="$ROOT/.local/dynamodb"
STATE_DIR="$ROOT/.local"
LOG_DIR="$ROOT/.local/logs"
DEFAULT_PORT="${DYNAMODB_PORT:-8000}"

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

# True when anything accepts a connection on the port, whatever it is.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

valid_port() { [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 65535)); }

# kill -0 alone would count a zombie (exited, not yet reaped) as running.
alive() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  stat="${stat##*) }"
  [[ "${stat%% *}" != Z ]]
}

# When the process started: with its pid, this names one process for good
# (a pid alone can be reused once the process is gone).
start_time() {
  local stat
  if stat="$(cat "/proc/$1/stat" 2>/dev/null)"; then
    stat="${stat##*) }"
    # Field 22 of /proc/PID/stat; fields 3.. remain after the command name.
    local -a fields
    read -r -a fields <<<"$stat"
    echo "${fields[19]}"
  else
    ps -o lstart= -p "$1" 2>/dev/null | tr -s ' ' '_'
  fi
}

command_line() {
  if [[ -r "/proc/$1/cmdline" ]]; then
    tr '\0' ' ' <"/proc/$1/cmdline"
  else
    ps -o args= -p "$1" 2>/dev/null
  fi
}

# True when PID is a DynamoDB Local that this script launched on PORT.
is_dynamodb_on() {
  local pid="$1" port="$2" args
  alive "$pid" || return 1
  args="$(command_line "$pid")" || return 1
  [[ "$args" == *DynamoDBLocal.jar* && " $args " == *" -port $port "* ]]
}

# True when PID holds the socket listening on PORT (Linux: /proc/net/tcp*).
# Elsewhere it cannot be told cheaply, and the process being alive must do.
listens_on() {
  local pid="$1" port="$2" hex inodes fd link
  [[ -r /proc/net/tcp ]] || { alive "$pid"; return; }
  printf -v hex ':%04X' "$port"
  # Columns: sl local_address rem_address st ... inode (10th); 0A is LISTEN.
  inodes="$(awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null)"
  [[ -n "$inodes" ]] || return 1
  for fd in /proc/"$pid"/fd/*; do
    link="$(readlink "$fd" 2>/dev/null)" || continue
    [[ "$link" == socket:\[*\] ]] || continue
    link="${link#socket:[}"
    grep -qx "${link%]}" <<<"$inodes" && return 0
  done
  return 1
}

# Waits until our java answers on the port, or fails if it dies, if another
# process turns out to hold the port, or if time runs out.
wait_ready() {
  local port="$1" pid="$2" logfile="$3" waited=0
  until answers "$port" && listens_on "$pid" "$port"; do
    if ! alive "$pid"; then
      if grep -q "Address already in use" "$logfile" 2>/dev/null; then
        log "port $port is already in use by another process: nothing started; choose another DYNAMODB_PORT"
      else
        log "DynamoDB Local exited during start-up; its log:"
        tail -n 30 "$logfile" >&2 || true
      fi
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

stop_pid() {
  local pid="$1" _
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do
    alive "$pid" || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

# --- per-port state: .local/dynamodb-PORT.pid holds "PID START_TIME" ---

state_file() { echo "$STATE_DIR/dynamodb-$1.pid"; }

# Takes over the single pid file of earlier versions of this script, when it
# names this port, so a stack started before the update can still be stopped.
adopt_legacy_state() {
  local port="$1" legacy="$STATE_DIR/dynamodb.pid" pid
  [[ -f "$legacy" && "$(cat "$legacy.port" 2>/dev/null || echo 8000)" == "$port" ]] || return 0
  pid="$(cat "$legacy")"
  if [[ ! -f "$(state_file "$port")" ]] && is_dynamodb_on "$pid" "$port"; then
    echo "$pid $(start_time "$pid")" >"$(state_file "$port")"
  fi
  rm -f "$legacy" "$legacy.port"
}

# Prints the pid the port's state file names when that process is still the
# very DynamoDB Local that `start` launched there (same pid, same start time,
# same port); fails otherwise.
state_pid() {
  local port="$1" file pid started
  file="$(state_file "$port")"
  [[ -f "$file" ]] || return 1
  read -r pid started <"$file" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  is_dynamodb_on "$pid" "$port" || return 1
  [[ "$(start_time "$pid")" == "$started" ]] || return 1
  echo "$pid"
}

# Removes the port's state file only if it still names PID (another start may
# have claimed the port since).
forget() {
  local port="$1" pid="$2" file recorded _
  file="$(state_file "$port")"
  [[ -f "$file" ]] || return 0
  read -r recorded _ <"$file" || true
  [[ "$recorded" == "$pid" ]] && rm -f "$file"
  return 0
}

port_arg() {
  local port="${1:-$DEFAULT_PORT}"
  valid_port "$port" || die "not a port: '$port'"
  echo "$port"
}

cmd_start() {
  local port pid file logfile
  port="$(port_arg "${1:-}")"
  file="$(state_file "$port")"
  adopt_legacy_state "$port"
  if pid="$(state_pid "$port")"; then
    die "port $port: DynamoDB Local is already running there (pid $pid, started earlier by this script);" \
      "stop it first ('make dynamodb-stop DYNAMODB_PORT=$port') or choose another DYNAMODB_PORT"
  fi
  if [[ -f "$file" ]]; then
    log "port $port: removing stale ${file#"$ROOT"/} (its process is gone)"
    rm -f "$file"
  fi
  if port_in_use "$port"; then
    die "port $port is already in use by another process (not one this script started): nothing started;" \
      "choose another DYNAMODB_PORT"
  fi
  cmd_install
  mkdir -p "$STATE_DIR"
  logfile="$LOG_DIR/dynamodb-$port.log"
  launch "$port" "$logfile"
  # Interrupted while waiting: take our java down with us, not leave it behind.
  trap 'stop_pid "$JAVA_PID"; forget "$port" "$JAVA_PID"; exit 130' INT
  trap 'stop_pid "$JAVA_PID"; forget "$port" "$JAVA_PID"; exit 143' TERM
  # noclobber: of two starts racing for one port, only one records it.
  if ! (set -C && echo "$JAVA_PID $(start_time "$JAVA_PID")" >"$file") 2>/dev/null; then
    stop_pid "$JAVA_PID"
    die "port $port: another start got there first; nothing started"
  fi
  if ! wait_ready "$port" "$JAVA_PID" "$logfile"; then
    stop_pid "$JAVA_PID"
    forget "$port" "$JAVA_PID"
    exit 1
  fi
  trap - INT TERM
  log "listening on http://127.0.0.1:$port (pid $JAVA_PID, log ${logfile#"$ROOT"/}, state ${file#"$ROOT"/})"
}

cmd_stop() {
  local port pid file recorded _
  port="$(port_arg "${1:-}")"
  file="$(state_file "$port")"
  adopt_legacy_state "$port"
  if [[ ! -f "$file" ]]; then
    if port_in_use "$port"; then
      log "port $port: not started by this script (no ${file#"$ROOT"/}); what answers there is left alone"
    else
      log "port $port: not running"
    fi
    return 0
  fi
  if pid="$(state_pid "$port")"; then
    stop_pid "$pid"
    log "port $port: stopped (pid $pid)"
  else
    read -r recorded _ <"$file" || true
    log "port $port: ${file#"$ROOT"/} names pid ${recorded:-?}, which is no longer this port's DynamoDB Local; nothing stopped"
  fi
  rm -f "$file"
}

status_of() {
  local port="$1" pid
  if pid="$(state_pid "$port")"; then
    echo "port $port: running (pid $pid)"
  elif port_in_use "$port"; then
    echo "port $port: in use by another process (not started by this script)"
    return 1
  else
    echo "port $port: not running"
    return 1
  fi
}

cmd_status() {
  if [[ "${1:-}" == --all ]]; then
    # A listing: it succeeds whatever it finds.
    local file port found=""
    for file in "$STATE_DIR"/dynamodb-*.pid; do
      [[ -f "$file" ]] || continue
      port="${file##*/dynamodb-}"
      port="${port%.pid}"
      status_of "$port" && found=1
    done
    [[ -n "$found" ]] || echo "no DynamoDB Local started by this script is running"
    return 0
  fi
  local port
  port="$(port_arg "${1:-}")"
  adopt_legacy_state "$port"
  status_of "$port"
}

# Foreground mode for the test harness. Prints "ready <port>" on stdout once
# DynamoDB Local answers, then watches PARENT_PID: when the test binary ends,
# however it ends, java goes with it. Keeps no state file: its caller owns it.
cmd_serve() {
  local port="${1:?usage: serve PORT PARENT_PID}" parent="${2:?usage: serve PORT PARENT_PID}"
  valid_port "$port" || die "not a port: '$port'"
  port_in_use "$port" && die "port $port is already in use by another process: nothing started"
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
  local port
  port="$(port_arg "${1:-}")"
  cat <<ENV
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=local
export AWS_SECRET_ACCESS_KEY=local
export AWS_REGION=us-east-1
ENV
}

command="${1:-}"
shift || true
case "$command" in
  install) cmd_install ;;
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  status) cmd_status "$@" ;;
  serve) cmd_serve "$@" ;;
  env) cmd_env "$@" ;;
  *)
    sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
