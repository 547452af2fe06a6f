"""Rehearse the upgrade from the last release offline, in moto (make upgrade-rehearsal; docs/upgrade.md).

1. Create the stack from the last released template (contract/released/
   template.yaml), as the deploy rehearsal creates one.
2. Load it with the last release's data: tests/fixtures/release-1.0.0/
   items.jsonl, written by that release's own binaries (its README says how).
3. Serve it with this release's code as migration 0001's first template
   state deploys it (`petstore-local`, DATA_LAYOUT=1), and start shoppers:
   customers placing and cancelling orders, staff completing and cancelling
   the old open orders, setting pets' stock and now and then creating a pet
   (under layout 1 one that holds its stock, as 1.0.0's do), through the
   HTTP API, until the end.
4. Walk migration 0001 (migrations/0001-holds-and-lapses.json) in order:
   each template state's change to the data table (the template rendered
   with DataLayoutStep) made through DynamoDB's API, at most one index a
   state, the indexes it must leave checked; each backfill `petstore-admin data
   migrate run` while the shoppers go on; before the switch, as
   gates.upgrade does, `data migrate run` again (a new `stock-items`
   pass for the pets created since) and `status --require-done`; at the
   switch the new state's code takes the traffic (a second server with
   DATA_LAYOUT=2, as a release shifts it), and `data migrate run` once more
   moves the pets the old server created meanwhile.
5. Stop the shoppers: no answer was 5xx; `data check` is sound (stock,
   open-order and hold counts exact, every claim current); every pet's
   stock on its stock item, its pet item without it; every list, paged
   to its end, holds every record of its kind in the table.

`--skip-backfills` runs the same without the backfills: it must fail (the
old open orders are uncounted). make upgrade-rehearsal runs both and fails
unless the first passes and the second fails.

What moto cannot show: the stack update itself (moto's CloudFormation fails
to update the last release's stack to this template, whose resources it
mostly cannot create: the table's change is made as CloudFormation makes it,
and make layout-check proves CloudFormation accepts each state), how long DynamoDB takes to create an index on a large
table (moto's is instant and always ACTIVE), CloudFormation's own refusal of
two index changes in one update (make layout-check proves each state), a
canary's gradual shift (the second server takes all traffic at once).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from decimal import Decimal  # noqa: F401  (boto3's numbers)
from typing import Any

from gates.repo import ROOT

ADMIN = ROOT / "target" / "debug" / "petstore-admin"
LOCAL = ROOT / "target" / "debug" / "petstore-local"
RELEASED = ROOT / "contract" / "released" / "template.yaml"
FIXTURE = ROOT / "tests" / "fixtures" / "release-1.0.0" / "items.jsonl"
MIGRATION = ROOT / "migrations" / "0001-holds-and-lapses.json"
STACK = "petstore"


class Steps:
    def __init__(self) -> None:
        self.failed: list[str] = []
        self.details: dict[str, str] = {}

    def step(self, what: str, started: float, ok: bool = True, detail: str = "") -> bool:
        self.details[what] = detail
        print(f"  {'ok  ' if ok else 'FAIL'} {what} ({time.monotonic() - started:.2f} s){': ' + detail if detail else ''}",
              flush=True)
        if not ok:
            self.failed.append(what)
        return ok


def deploy_rehearsal():
    """The deploy rehearsal (imported when used: it sets up moto's offline
    environment when imported)."""
    from gates import deploy_rehearsal as module
    return module


class SerialEmulator:
    """The deploy rehearsal's emulator, answering one request at a time.
    moto applies an update expression or a transaction without isolation
    from a request running beside it (two `ADD`s to one hold count can lose
    one; a query can fail while an index is added), where DynamoDB is
    atomic: one at a time, moto is atomic too, so what the shoppers and the
    backfill race is what DynamoDB would give them."""

    def __init__(self, dr) -> None:
        from moto.moto_server.threaded_moto_server import ThreadedMotoServer
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        class Serial(ThreadedMotoServer):
            def _server_entry(self) -> None:
                app, lock = DomainDispatcherApplication(create_backend_app), threading.Lock()

                def one_at_a_time(environ, start_response):
                    with lock:
                        return list(app(environ, start_response))

                self._server = make_server(self._ip_address, self._port, one_at_a_time, True,
                                           request_handler=MotoRequestHandler)
                self._server_ready_event.set()
                self._server.serve_forever()

        import logging
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
        self.region = dr.REGION
        self.server = Serial(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"

    def client(self, service: str) -> Any:
        import boto3
        # boto3's stubs type each service by its literal name: this takes any.
        return boto3.client(service, endpoint_url=self.endpoint, region_name=self.region)  # type: ignore[call-overload]

    def stop(self) -> None:
        self.server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    """The moto stack's tables, as the functions and the admin tool see them."""

    def __init__(self, emulator, resolver) -> None:
        self.emulator = emulator
        self.table = resolver.physical["DataTable"]
        self.env = dict(os.environ, AWS_ENDPOINT_URL_DYNAMODB=emulator.endpoint, TABLE_NAME=self.table,
                        RATE_LIMIT_TABLE_NAME=resolver.physical["RateLimitTable"], AWS_REGION="us-east-1",
                        AWS_ACCESS_KEY_ID="rehearsal", AWS_SECRET_ACCESS_KEY="rehearsal", RUST_LOG="warn",
                        # The walk deploys as gates.upgrade does over a stack whose order
                        # lists had 32 shards: DrainingOrderRate=10000 until `data reshard`.
                        **DRAINING)

    def admin(self, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
        return subprocess.run([str(ADMIN), *args], env=self.env, capture_output=True, text=True, timeout=timeout)

    def indexes(self) -> list[str]:
        described = self.emulator.client("dynamodb").describe_table(TableName=self.table)["Table"]
        return sorted(i["IndexName"] for i in described.get("GlobalSecondaryIndexes", []))

    def items(self) -> list[dict]:
        ddb, found, start = self.emulator.client("dynamodb"), list[dict](), dict[str, Any]()
        while True:
            page = ddb.scan(TableName=self.table, **start)
            found += page["Items"]
            if "LastEvaluatedKey" not in page:
                return found
            start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}


# The released stack's 32 order list shards (and 1 pet list shard) read
# beside this template's OrderRate's while the lists are resharded
# (Capacity of DrainingOrderRate=10000: 32 and 1).
DRAINING = {"ORDER_LIST_SHARDS_DRAINING": "32", "PET_LIST_SHARDS_DRAINING": "1"}


class Server:
    """`petstore-local` on the stack's tables with one template state's DATA_LAYOUT
    (`drained`: the release's own deploy after the reshard, DrainingOrderRate=none)."""

    def __init__(self, stack: Stack, layout: str, drained: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(stack.env, PORT=str(self.port), DATA_LAYOUT=layout, HOLD_DAYS="30")
        if drained:
            env = {k: v for k, v in env.items() if k not in DRAINING}
        self.process = subprocess.Popen([str(LOCAL)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/openapi.json", timeout=2)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if self.process.poll() is not None:
                    stderr = self.process.stderr.read() if self.process.stderr else ""
                    raise SystemExit(f"upgrade-rehearsal: petstore-local exited: {stderr}") from None
                time.sleep(0.2)
        raise SystemExit("upgrade-rehearsal: petstore-local did not answer within 60 s")

    def stop(self) -> None:
        with_signal = self.process.poll() is None
        if with_signal:
            os.killpg(self.process.pid, signal.SIGINT)
        # Stopped with SIGINT, it finishes the requests it has: waited for as
        # long as a request may take (`call`), or a slow order under load is
        # cut without an answer and counted as a request the switch dropped.
        try:
            self.process.wait(timeout=ANSWER_TIMEOUT + 5)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)


# How long a shopper waits for an answer (seconds).
ANSWER_TIMEOUT = 90


def call(base: str, key: str, method: str, path: str, body: dict | None = None) -> tuple[int, Any, dict]:
    """(status, the JSON body, or the error's text at status 0; the headers)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"X-API-Key": key, "Content-Type": "application/json"})
    try:
        # ANSWER_TIMEOUT, 90 s: under `make test`'s parallel rehearsals moto ran this walk's
        # backfills 8x slower than alone, and one order (a read and a
        # transaction, each retried on conflict with the backfill's moves)
        # once went past 30 s. A request the switch dropped never answers.
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT) as answer:
            raw = answer.read()
            return answer.status, json.loads(raw) if raw else None, dict(answer.headers)
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw) if raw else None, dict(error.headers)
        except json.JSONDecodeError:
            return error.code, None, dict(error.headers)
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        # No answer at all (status 0): a request the switch dropped would be one.
        return 0, str(error), {}


def every_page(base: str, key: str, path: str) -> list[dict]:
    """A list paged to its end through its `Link: rel="next"`."""
    found: list[dict] = []
    url = path
    for _ in range(10_000):
        status, body, headers = call(base, key, "GET", url)
        if status != 200:
            raise RuntimeError(f"GET {url}: {status} {body}")
        found += body
        link = headers.get("Link", "")
        if 'rel="next"' not in link:
            return found
        url = link.split(">", 1)[0].lstrip("<")
        url = url[url.index("/", 8):] if url.startswith("http") else url
    raise RuntimeError(f"{path}: more than 10,000 pages")


class Shoppers:
    """Customers placing and cancelling, staff completing and cancelling the
    old open orders, until stopped; every answer's status counted."""

    def __init__(self, server: Server, customers: list[str], staff: str, pets: list[int], old_open: list[int],
                 category: int) -> None:
        self.base = server.url
        self.customers, self.staff, self.pets, self.category = customers, staff, pets, category
        self.created: list[int] = []
        self.old_open = list(old_open)
        self.lock = threading.Lock()
        self.statuses: dict[int, int] = {}
        self.five_hundreds: list[str] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.customer, args=(key, n), daemon=True)
                        for n, key in enumerate(customers)]
        self.threads.append(threading.Thread(target=self.staff_member, daemon=True))
        self.threads.append(threading.Thread(target=self.stock_keeper, daemon=True))

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def note(self, what: str, status: int, body) -> None:
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status >= 500 or status == 0:
                self.five_hundreds.append(f"{what}: {status} {body}")

    def customer(self, key: str, seed: int) -> None:
        rng, mine = random.Random(seed), list[dict]()
        while not self.stopping.is_set():
            if mine and rng.random() < 0.4:
                order = mine.pop(rng.randrange(len(mine)))
                status, body, _ = call(self.base, key, "DELETE", f"/store/orders/{order}")
                self.note("cancel", status, body)
            else:
                status, body, _ = call(self.base, key, "POST", "/store/orders",
                                       {"petId": rng.choice(self.pets), "quantity": 1})
                self.note("place", status, body)
                if status == 201:
                    mine.append(body["id"])
            status, body, _ = call(self.base, key, "GET", "/store/orders?complete=false")
            self.note("own open orders", status, body)
            time.sleep(0.02)

    def staff_member(self) -> None:
        rng = random.Random(99)
        # Half the old open orders are left open to the end, however long
        # the walk takes: the backfills must count them (a walk without the
        # backfills must fail on them, holds-counted).
        keep = len(self.old_open) // 2
        while not self.stopping.is_set() and len(self.old_open) > keep:
            order = self.old_open.pop(rng.randrange(len(self.old_open)))
            if rng.random() < 0.5:
                status, body, _ = call(self.base, self.staff, "DELETE", f"/store/orders/{order}")
                self.note("cancel an old order", status, body)
            else:
                status, body, _ = call(self.base, self.staff, "PATCH", f"/store/orders/{order}", {"complete": True})
                self.note("complete an old order", status, body)
            time.sleep(0.1)

    def stock_keeper(self) -> None:
        """Staff setting the pets' stock (the pets the customers order), and
        creating a pet every few sets: under layout 1, one that holds its
        stock, which the `stock-items` backfill must still move."""
        rng, sets = random.Random(7), 0
        while not self.stopping.is_set():
            pet = rng.choice(self.pets)
            status, body, _ = call(self.base, self.staff, "PUT", f"/store/inventory/{pet}",
                                   {"quantity": rng.randrange(20, 60)})
            self.note("set stock", status, body)
            sets += 1
            if sets % 10 == 0 and len(self.created) < 8:
                status, body, _ = call(self.base, self.staff, "POST", "/pets",
                                       {"name": f"Rehearsal pet {sets}", "categoryId": self.category,
                                        "status": "available"})
                self.note("create a pet", status, body)
                if status == 201:
                    self.created.append(body["id"])
            time.sleep(0.25)

    def switch(self, server: Server) -> None:
        self.base = server.url


def load_fixture(stack: Stack) -> int:
    ddb = stack.emulator.client("dynamodb")
    items = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    items = [item.get("Item", item) for item in items]
    for start in range(0, len(items), 25):
        ddb.batch_write_item(RequestItems={stack.table: [{"PutRequest": {"Item": item}} for item in items[start:start + 25]]})
    return len(items)


def kind(item: dict) -> str:
    return item["PK"]["S"].split("#", 1)[0]


def key_of(stack: Stack, *args: str) -> str:
    made = stack.admin("keys", "create", *args)
    if made.returncode != 0:
        raise SystemExit(f"upgrade-rehearsal: keys create {args}: {made.stderr}")
    return json.loads(made.stdout)["key"]


def expected_indexes(step: str) -> list[str]:
    """The data table's indexes at a template state of migration 0001."""
    order = ["1", "2", "3", "4", "5", "6", "7", "8", "done"]
    at = order.index(step)
    new = [f"GSI{n}v2" for n in range(1, 5) if at >= n - 1]
    old = [f"GSI{n}" for n in range(1, 5) if at < n + 4]
    return sorted(new + old + ["GSI5"])


def rehearse(emulator, dr, steps: Steps, skip_backfills: bool) -> None:
    started = time.monotonic()
    checks = dr.Checks()
    before = create_released(emulator, dr, checks)
    if not steps.step("the stack of the last release (contract/released/template.yaml) created", started,
                      before is not None and not checks.failed, "; ".join(checks.failed)):
        return
    stack = Stack(emulator, before)
    # The events function does not run here (petstore-local serves the API
    # and publishes nothing): moto would try to run it in Docker for every
    # record of the table's stream.
    # (Deleting the mapping through Lambda's API leaves moto's table calling
    # it: the table's own list is cleared, moto running in this process.)
    from moto.dynamodb.models import dynamodb_backends
    dynamodb_backends["123456789012"][dr.REGION].get_table(stack.table).lambda_event_source_mappings.clear()
    started = time.monotonic()
    loaded = load_fixture(stack)
    steps.step(f"load the last release's data ({FIXTURE.relative_to(ROOT)})", started, True, f"{loaded} items; indexes {stack.indexes()}")
    items = stack.items()
    pets = [int(i["id"]["N"]) for i in items if kind(i) == "PET" and i["SK"]["S"] == "PET"]
    old_open = [int(i["id"]["N"]) for i in items if kind(i) == "ORDER" and i["SK"]["S"] == "ORDER"
                and not i.get("complete", {}).get("BOOL") and "lapsesAt" not in i]
    category = next(int(i["id"]["N"]) for i in items if kind(i) == "CATEGORY" and i["SK"]["S"] == "CATEGORY")
    migration = json.loads(MIGRATION.read_text())
    server: Server | None = None
    shoppers: Shoppers | None = None
    server_layout: str | None = None
    for entry in migration["steps"]:
        started = time.monotonic()
        if entry["kind"] == "backfill":
            if skip_backfills:
                print(f"  skip backfill {entry['name']} (--skip-backfills)")
                continue
            ran = stack.admin("data", "migrate", "run", "--only", entry["name"])
            steps.step(f"backfill {entry['name']} (petstore-admin data migrate run) while the shoppers go on", started,
                       ran.returncode == 0, (ran.stdout.strip().splitlines() or [ran.stderr.strip()])[-1])
            continue
        step = entry["step"]
        if entry.get("switch") and not skip_backfills:
            require_done(stack, steps, "before the switch")
        changes = apply_indexes(stack, step)
        got = stack.indexes()
        steps.step(f"DataLayoutStep={step}: {entry['does']}", started, got == expected_indexes(step) and changes <= 1,
                   f"indexes {got}" + (f"; {changes} index changes in one update" if changes > 1 else ""))
        layout = "1" if step in ("1", "2", "3", "4") else "2"
        if server is None or layout == "2" and server_layout == "1":
            started = time.monotonic()
            new_server = Server(stack, layout)
            if shoppers is None:
                customers = [key_of(stack, "--plan", plan) for plan in ("free", "pro", "pro", "business")]
                staff = key_of(stack, "--role", "staff", "--plan", "business")
                shoppers = Shoppers(new_server, customers, staff, pets, old_open, category)
                shoppers.start()
            else:
                # As a release shifts traffic: the new version takes every
                # new request, the old one finishes those it has, then stops.
                shoppers.switch(new_server)
                time.sleep(2)
                if server is not None:
                    server.stop()
            server, server_layout = new_server, layout
            steps.step(f"this release's code serves with DATA_LAYOUT={layout}", started)
            if layout == "2" and not skip_backfills:
                require_done(stack, steps, "after the switch")
    # The lists keyed under 32 shards moved under the template's OrderRate
    # while the shoppers go on; then the release's own deploy drops the
    # draining count, and finish() lists through it.
    if server is None or shoppers is None:
        raise SystemExit(f"upgrade-rehearsal: {MIGRATION.name} has no template state: nothing served")
    started = time.monotonic()
    resharded = stack.admin("data", "reshard")
    steps.step("data reshard (petstore-admin) while the shoppers go on", started, resharded.returncode == 0,
               (resharded.stdout.strip().splitlines() or [resharded.stderr.strip()])[-1])
    drained = Server(stack, "2", drained=True)
    shoppers.switch(drained)
    time.sleep(1)
    server.stop()
    time.sleep(1)
    shoppers.stop()
    finish(stack, drained, shoppers, staff, steps)
    drained.stop()


def require_done(stack: Stack, steps: Steps, when: str) -> None:
    """As gates.upgrade around the switch: `data migrate run` (a
    backfill pending again, `stock-items` for the pets layout 1 created
    since, runs a new pass), then `status --require-done`."""
    started = time.monotonic()
    ran = stack.admin("data", "migrate", "run")
    lines = ran.stdout.strip().splitlines()
    steps.step(f"data migrate run {when}: {len(lines)} backfill passes", started, ran.returncode == 0,
               (lines or [ran.stderr.strip()])[-1] if lines or ran.returncode else "")
    started = time.monotonic()
    status = stack.admin("data", "migrate", "status", "--require-done")
    pending = [s["step"] for s in map(json.loads, status.stdout.splitlines()) if s["state"] != "done"
               and s["kind"] == "backfill"] if status.stdout.strip() else []
    steps.step(f"data migrate status --require-done {when}", started, status.returncode == 0,
               f"pending {pending}" if pending else status.stderr.strip())


def create_released(emulator, dr, checks):
    """The last release's stack, created as the deploy rehearsal creates one
    (its steps, not its checks: those are this release's template's)."""
    import contextlib
    import io
    sam, translated = dr.translate(RELEASED, {})
    dr.upload_code(emulator, sam)
    stack, deferred = dr.split(translated, checks, dr.parameters_of(translated, {}))
    emulator.client("s3").put_object(Bucket=dr.ARTIFACTS, Key=f"{STACK}.json", Body=json.dumps(stack).encode())
    cf = emulator.client("cloudformation")
    with contextlib.redirect_stdout(io.StringIO()):
        cf.create_stack(StackName=STACK, TemplateURL=f"https://s3.amazonaws.com/{dr.ARTIFACTS}/{STACK}.json",
                        Capabilities=["CAPABILITY_IAM"])
    status = cf.describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"]
    if not checks.equal(status, "CREATE_COMPLETE", "the released stack's status"):
        return None
    resolver = dr.Resolver(translated, dr.parameters_of(translated, {}), STACK)
    for summary in cf.list_stack_resources(StackName=STACK)["StackResourceSummaries"]:
        resolver.physical[summary["LogicalResourceId"]] = summary.get("PhysicalResourceId", "")
    dr.attribute_getters(emulator, resolver, stack)
    for name, resource in stack["Resources"].items():
        if resource["Type"] == "AWS::Events::EventBus":
            resolver.physical[name] = resolver.get_att(name, "Name")
    with contextlib.redirect_stdout(io.StringIO()):
        dr.create_deferred(emulator, resolver, deferred, checks)
    return resolver


def apply_indexes(stack: Stack, step: str) -> int:
    """A template state's change to the data table, made through DynamoDB's
    API as CloudFormation's update makes it (moto's CloudFormation cannot
    update the last release's stack to this template: its update fails on
    `Fn::GetAtt DataTable` among the new resources); how many indexes it
    created or deleted (CloudFormation's most is one: make layout-check)."""
    ddb = stack.emulator.client("dynamodb")
    rendered = deploy_rehearsal_indexes(step)
    want, got = set(rendered), set(stack.indexes())
    for name in sorted(want - got):
        spec = rendered[name]
        ddb.update_table(TableName=stack.table, AttributeDefinitions=[
            {"AttributeName": k["AttributeName"], "AttributeType": "N" if k["AttributeName"] == "id" else "S"}
            for k in spec["KeySchema"]],
            GlobalSecondaryIndexUpdates=[{"Create": {"IndexName": name, "KeySchema": spec["KeySchema"],
                                                     "Projection": spec["Projection"]}}])
    for name in sorted(got - want):
        ddb.update_table(TableName=stack.table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": name}}])
    return len(want ^ got)


def deploy_rehearsal_indexes(step: str) -> dict[str, dict]:
    from cfnlint.decode import decode

    from gates import layout_check
    template, _ = decode(str(ROOT / "template.yaml"))
    rendered = layout_check.Rendered(template, {"DataLayoutStep": step})
    return {i["IndexName"]: i for i in rendered.resources["DataTable"]["Properties"]["GlobalSecondaryIndexes"]}


def finish(stack: Stack, server: Server, shoppers: Shoppers, staff: str, steps: Steps) -> None:
    started = time.monotonic()
    steps.step(f"the shoppers' answers: {dict(sorted(shoppers.statuses.items()))}, no 5xx and none unanswered", started,
               not shoppers.five_hundreds and sum(shoppers.statuses.values()) > 0,
               "; ".join(shoppers.five_hundreds[:5]))
    started = time.monotonic()
    checked = stack.admin("data", "check")
    findings = sorted({json.loads(line).get("invariant", "?") for line in checked.stdout.splitlines()[:-1] if line.startswith("{")})
    steps.step("data check: sound", started, checked.returncode == 0,
               ", ".join(findings) or (checked.stdout.strip().splitlines() or [checked.stderr.strip()])[-1])
    for line in checked.stdout.splitlines()[:-1][:5]:
        print(f"      {line}")
    started = time.monotonic()
    items = stack.items()
    orders = {int(i["id"]["N"]) for i in items if kind(i) == "ORDER" and i["SK"]["S"] == "ORDER"}
    open_orders = {int(i["id"]["N"]) for i in items if kind(i) == "ORDER" and i["SK"]["S"] == "ORDER"
                   and not i.get("complete", {}).get("BOOL")}
    pets = {int(i["id"]["N"]) for i in items if kind(i) == "PET" and i["SK"]["S"] == "PET"}
    stock_items = {int(i["id"]["N"]) for i in items if kind(i) == "PET" and i["SK"]["S"] == "STOCK"}
    holding = sorted(int(i["id"]["N"]) for i in items if kind(i) == "PET" and i["SK"]["S"] == "PET"
                     and ("stock" in i or "openOrders" in i or "GSI5PK" in i))
    steps.step(f"every pet's stock on its stock item ({len(pets)} pets, {len(shoppers.created)} created "
               "during the walk), no pet item holding it", started, stock_items == pets and not holding,
               f"pet items holding stock {holding[:5]}, pets without a stock item {sorted(pets - stock_items)[:5]}"
               if holding or stock_items != pets else "")
    categories = {int(i["id"]["N"]) for i in items if kind(i) == "CATEGORY" and i["SK"]["S"] == "CATEGORY"}
    lists = {
        "GET /store/orders": ({o["id"] for o in every_page(server.url, staff, "/store/orders?limit=100")}, orders),
        "GET /store/orders?complete=false": (
            {o["id"] for o in every_page(server.url, staff, "/store/orders?complete=false&limit=100")}, open_orders),
        "GET /pets": ({p["id"] for p in every_page(server.url, staff, "/pets?limit=100")}, pets),
        "GET /categories": ({c["id"] for c in every_page(server.url, staff, "/categories?limit=100")}, categories),
    }
    for name, (listed, stored) in lists.items():
        steps.step(f"{name} lists every one stored ({len(stored)})", started, listed == stored,
                   f"missing {sorted(stored - listed)[:5]}, extra {sorted(listed - stored)[:5]}" if listed != stored else "")
    lapsing = [o for o in every_page(server.url, staff, "/store/orders?complete=false&limit=100") if "lapsesAt" not in o]
    steps.step("every open order listed says when it lapses (lapsesAt)", started, not lapsing,
               f"{len(lapsing)} without: {[o['id'] for o in lapsing[:5]]}" if lapsing else "")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-backfills", action="store_true", help="rehearse without the backfills: must fail")
    parser.add_argument("--expect-failure", action="store_true",
                        help="pass only when the run fails as a walk without the backfills must: data check "
                             "finds the old open orders uncounted (holds-counted)")
    args = parser.parse_args()
    if not ADMIN.is_file() or not LOCAL.is_file():
        subprocess.run(["cargo", "build", "--bin", "petstore-admin", "--bin", "petstore-local"], cwd=ROOT, check=True)
    dr = deploy_rehearsal()
    emulator = SerialEmulator(dr)
    steps = Steps()
    print(f"upgrade-rehearsal{' --skip-backfills' if args.skip_backfills else ''}: on moto at {emulator.endpoint}")
    try:
        rehearse(emulator, dr, steps, args.skip_backfills)
    finally:
        emulator.stop()
    print(f"upgrade-rehearsal: {len(steps.failed)} failed" + (f": {steps.failed}" if steps.failed else ""))
    if args.expect_failure:
        as_it_must = "holds-counted" in steps.details.get("data check: sound", "") and "data check: sound" in steps.failed
        print(f"upgrade-rehearsal: without the backfills the walk {'fails as it must' if as_it_must else 'did NOT fail as it must'}"
              " (data check: holds-counted)")
        return 0 if as_it_must else 1
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main())
