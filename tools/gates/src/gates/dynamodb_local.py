"""Runs DynamoDB Local processes, one per port (installed by dynamodb-install.sh).

  dynamodb-local.sh start [PORT]       in the background, in memory, on PORT ($DYNAMODB_PORT, 8000)
  dynamodb-local.sh stop [PORT]        stop what `start` started on that port, nothing else
  dynamodb-local.sh status [PORT|--all]
                                       whether the port's DynamoDB Local runs (exit 1 if
                                       not), or every port's that `start` started
  dynamodb-local.sh serve PORT PARENT_PID
                                       in the foreground: prints "ready PORT" once it
                                       answers, and stops java as soon as PARENT_PID is
                                       gone (the test harness and the bench: no run
                                       leaks a JVM)

Each port is its own stack: `start` records what it launched in
.local/dynamodb-PORT.pid (pid and process start time), and `stop` stops only
the process that file names, and only while it is still that DynamoDB Local on
that port. `start` and `serve` refuse a port on which anything already
answers, a DynamoDB Local of ours included, so two `make run`s (or `make run`
beside `make bench`) never share, or stop, each other's database.

Python, not bash: process identity, signals and sockets read plainly here, and
only the standard library is used. Linux only (/proc), as is every local tool
of the project.
"""

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from gates.repo import ROOT

INSTALL_DIR = ROOT / ".local" / "dynamodb"
STATE_DIR = ROOT / ".local"
LOG_DIR = ROOT / ".local" / "logs"

# A small heap and the client compiler start the JVM in about two seconds on
# two cores.
JAVA_OPTS = os.environ.get(
    "DYNAMODB_JAVA_OPTS", "-Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
).split()
READY_TIMEOUT_SECONDS = float(os.environ.get("DYNAMODB_READY_TIMEOUT", "60"))


class Refused(Exception):
    """What the user is told, and exit status 1."""


def log(message):
    print(f"dynamodb-local: {message}", file=sys.stderr, flush=True)


def shown(path):
    return str(Path(path).relative_to(ROOT))


# --- what is on a port ---------------------------------------------------


def port_in_use(port):
    """Whether anything accepts a connection on the port, whatever it is."""
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def answers(port):
    """Whether something answers HTTP on the port (DynamoDB Local answers any
    request, signed or not, once it is serving)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request(
            "POST",
            "/",
            body=b"{}",
            headers={
                "X-Amz-Target": "DynamoDB_20120810.ListTables",
                "Content-Type": "application/x-amz-json-1.0",
            },
        )
        connection.getresponse()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def listens_on(pid, port):
    """Whether PID holds the socket listening on PORT (/proc/net/tcp*)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            columns = row.split()
            # Columns: sl local_address rem_address st ... inode (10th); 0A is LISTEN.
            if columns[3] == "0A" and int(columns[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(columns[9])
    if not inodes:
        return False
    try:
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in descriptors:
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


# --- which process ------------------------------------------------------


def stat_fields(pid):
    """/proc/PID/stat from field 3 on (after the command name), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(") ", 1)[1].split()


def alive(pid):
    """Running: a zombie (exited, not yet reaped) is not."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def start_time(pid):
    """When the process started (field 22 of /proc/PID/stat): with its pid,
    this names one process for good (a pid alone is reused)."""
    fields = stat_fields(pid)
    return fields[19] if fields else None


def is_dynamodb_on(pid, port):
    """Whether PID is a DynamoDB Local launched on PORT."""
    if not alive(pid):
        return False
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    has_jar = any(arg.endswith(b"DynamoDBLocal.jar") for arg in args)
    return has_jar and any(
        args[i] == b"-port" and args[i + 1] == str(port).encode()
        for i in range(len(args) - 1)
    )


# --- one java -----------------------------------------------------------


def launch(port, logfile, own_session):
    """java in INSTALL_DIR, its output to LOGFILE."""
    if not (INSTALL_DIR / "DynamoDBLocal.jar").is_file():
        raise Refused(
            "DynamoDB Local is not installed: run 'make dynamodb-install' or 'scripts/dynamodb-install.sh'"
        )
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with open(logfile, "wb") as output:
        return subprocess.Popen(
            ["java", *JAVA_OPTS, "-Djava.library.path=./DynamoDBLocal_lib"]
            + [
                "-jar",
                "DynamoDBLocal.jar",
                "-inMemory",
                "-sharedDb",
                "-disableTelemetry",
            ]
            + ["-port", str(port)],
            cwd=INSTALL_DIR,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            # start: it outlives this script and its terminal's Ctrl-C, and
            # `stop` ends it. serve: it goes with this script.
            start_new_session=own_session,
        )


def wait_ready(java, port, logfile):
    """Until our java answers on the port; Refused if it dies, if another
    process turns out to hold the port, or if time runs out."""
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while not (answers(port) and listens_on(java.pid, port)):
        if java.poll() is not None:
            output = logfile.read_text(errors="replace")
            if "Address already in use" in output:
                raise Refused(
                    f"port {port} is already in use by another process: nothing started;"
                    " choose another DYNAMODB_PORT"
                )
            tail = "\n".join(output.splitlines()[-30:])
            raise Refused(f"DynamoDB Local exited during start-up; its log:\n{tail}")
        if time.monotonic() > deadline:
            raise Refused(
                f"DynamoDB Local did not answer on port {port} within {READY_TIMEOUT_SECONDS:g}s"
            )
        time.sleep(0.1)


def stop_pid(pid):
    """SIGTERM, then SIGKILL after 5 s."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        if not alive(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_child(java):
    if java.poll() is None:
        stop_pid(java.pid)
    java.wait()


# --- background stacks: .local/dynamodb-PORT.pid holds "PID START_TIME" ---


def state_file(port):
    return STATE_DIR / f"dynamodb-{port}.pid"


def recorded(port):
    """(pid, start time) the port's state file names, or None."""
    try:
        pid, started = state_file(port).read_text().split()
        return int(pid), started
    except (OSError, ValueError):
        return None


def state_pid(port):
    """The pid the state file names while it is still the very DynamoDB Local
    `start` launched there (same pid, same start time, same port)."""
    record = recorded(port)
    if (
        record
        and is_dynamodb_on(record[0], port)
        and start_time(record[0]) == record[1]
    ):
        return record[0]
    return None


def forget(port, pid):
    """Removes the state file only if it still names PID (another start may
    have claimed the port since)."""
    record = recorded(port)
    if record and record[0] == pid:
        state_file(port).unlink(missing_ok=True)


def start(port):
    file = state_file(port)
    pid = state_pid(port)
    if pid:
        raise Refused(
            f"port {port}: DynamoDB Local is already running there (pid {pid}, started earlier"
            f" by this script); stop it first ('make dynamodb-stop DYNAMODB_PORT={port}') or"
            " choose another DYNAMODB_PORT"
        )
    if file.exists():
        log(f"port {port}: removing stale {shown(file)} (its process is gone)")
        file.unlink()
    if port_in_use(port):
        raise Refused(
            f"port {port} is already in use by another process (not one this script started):"
            " nothing started; choose another DYNAMODB_PORT"
        )
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    logfile = LOG_DIR / f"dynamodb-{port}.log"
    java = launch(port, logfile, own_session=True)
    try:
        # Exclusive: of two starts racing for one port, only one records it.
        try:
            with open(file, "x") as state:
                state.write(f"{java.pid} {start_time(java.pid)}\n")
        except FileExistsError:
            stop_child(java)
            raise Refused(
                f"port {port}: another start got there first; nothing started"
            ) from None
        wait_ready(java, port, logfile)
    except BaseException:
        # Refused, failed, or interrupted while waiting: take our java down
        # with us, not leave it behind.
        stop_child(java)
        forget(port, java.pid)
        raise
    log(
        f"listening on http://127.0.0.1:{port} (pid {java.pid}, log {shown(logfile)},"
        f" state {shown(file)})"
    )


def stop(port):
    file = state_file(port)
    record = recorded(port)
    if not file.exists():
        if port_in_use(port):
            log(
                f"port {port}: not started by this script (no {shown(file)}); what answers there is left alone"
            )
        else:
            log(f"port {port}: not running")
        return 0
    pid = state_pid(port)
    if pid:
        stop_pid(pid)
        log(f"port {port}: stopped (pid {pid})")
    else:
        named = record[0] if record else "?"
        log(
            f"port {port}: {shown(file)} names pid {named}, which is no longer this port's DynamoDB Local; nothing stopped"
        )
    file.unlink(missing_ok=True)
    return 0


def status_of(port):
    pid = state_pid(port)
    if pid:
        print(f"port {port}: running (pid {pid})")
        return 0
    if port_in_use(port):
        print(f"port {port}: in use by another process (not started by this script)")
    else:
        print(f"port {port}: not running")
    return 1


def status_all():
    """A listing: it succeeds whatever it finds."""
    ports = sorted(
        int(file.stem.removeprefix("dynamodb-"))
        for file in STATE_DIR.glob("dynamodb-*.pid")
        if file.stem.removeprefix("dynamodb-").isdigit()
    )
    running = [port for port in ports if status_of(port) == 0]
    if not running:
        print("no DynamoDB Local started by this script is running")
    return 0


# --- foreground -----------------------------------------------------------


def serve(port, parent):
    """For the test harness and the bench: keeps no state file (its caller
    owns the process), and one log per random port would pile up, so the log
    is kept only with DYNAMODB_KEEP_LOGS."""
    if port_in_use(port):
        raise Refused(
            f"port {port} is already in use by another process: nothing started"
        )
    logfile = LOG_DIR / f"dynamodb-{port}.log"
    java = launch(port, logfile, own_session=False)
    try:
        wait_ready(java, port, logfile)
        print(f"ready {port}", flush=True)
        while alive(parent) and java.poll() is None:
            time.sleep(0.5)
    finally:
        stop_child(java)
        if not os.environ.get("DYNAMODB_KEEP_LOGS"):
            logfile.unlink(missing_ok=True)
    return 0


def port_arg(raw):
    raw = raw if raw is not None else os.environ.get("DYNAMODB_PORT", "8000")
    if not (raw.isdigit() and 1 <= int(raw) <= 65535):
        raise Refused(f"not a port: '{raw}'")
    return int(raw)


def on_signal(status):
    def handler(_signum, _frame):
        sys.exit(status)

    return handler


def main(args):
    # SIGTERM and SIGINT unwind (stopping what this run launched) and exit
    # 143 and 130, as a shell would.
    signal.signal(signal.SIGTERM, on_signal(143))
    signal.signal(signal.SIGINT, on_signal(130))
    command, rest = (args[0], args[1:]) if args else ("", [])
    argument = rest[0] if rest else None
    if command == "start" and len(rest) <= 1:
        return start(port_arg(argument)) or 0
    if command == "stop" and len(rest) <= 1:
        return stop(port_arg(argument))
    if command == "status" and argument == "--all":
        return status_all()
    if command == "status" and len(rest) <= 1:
        return status_of(port_arg(argument))
    if command == "serve" and len(rest) == 2 and rest[1].isdigit():
        return serve(port_arg(rest[0]), int(rest[1]))
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


def command() -> int:
    """The command line (petstore-dynamodb-local, scripts/dynamodb-local.sh):
    a refusal is one plain line, not a traceback."""
    try:
        return main(sys.argv[1:])
    except Refused as refusal:
        log(str(refusal))
        return 1


if __name__ == "__main__":
    sys.exit(command())
