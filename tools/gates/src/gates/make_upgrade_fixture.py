"""Makes tests/fixtures/release-1.0.0/: a data table as the last release's own
code fills it, for the upgrade tests (tests/upgrade/).

  petstore-make-upgrade-fixture PETSTORE_LOCAL PETSTORE_ADMIN [OUT_DIR]

PETSTORE_LOCAL and PETSTORE_ADMIN are the last release's binaries (commit
e25da8e, contract 1.0.0), built from a worktree of that commit:

  git worktree add --detach ../wt-e25 e25da8e
  (cd ../wt-e25 && cargo build --bin petstore-local --bin petstore-admin)
  .venv/bin/petstore-make-upgrade-fixture \
      ../wt-e25/target/debug/petstore-local ../wt-e25/target/debug/petstore-admin

It starts a DynamoDB Local of its own (in memory, a free port, through
scripts/dynamodb-local.sh serve), serves the old API on it, creates keys with
the old admin tool, and shops through the old API only: so every item is as
that code wrote it, never as this release's code would. Then it scans the
data table and writes every item, in DynamoDB JSON, one a line, sorted by key
(items.jsonl), and the keys it made with their secrets (keys.json: a local
table's keys, made for the tests, valid nowhere else).

Python and boto3 (in .venv, `make venv`), as the other rehearsal scripts.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3

from gates.repo import ROOT

TABLE = "petstore-release-1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_dynamodb():
    """DynamoDB Local in the harness's foreground mode: it stops with us."""
    port = free_port()
    java = subprocess.Popen(
        [str(ROOT / "scripts" / "dynamodb-local.sh"), "serve", str(port), str(os.getpid())],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert java.stdout is not None  # stdout=PIPE
    ready = java.stdout.readline().strip()
    if ready != f"ready {port}":
        sys.exit(f"DynamoDB Local said {ready!r}")
    return java, f"http://127.0.0.1:{port}"


class Api:
    """The old service over HTTP, as a client calls it."""

    def __init__(self, base):
        self.base = base

    def call(self, method, path, key, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("X-API-Key", key)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request) as answer:
                raw = answer.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            sys.exit(f"{method} {path}: {error.code} {error.read().decode()}")


def wait_serving(base, server):
    for _ in range(600):
        if server.poll() is not None:
            sys.exit("petstore-local exited")
        try:
            urllib.request.urlopen(base + "/openapi.json").close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit("petstore-local does not answer")


def create_key(admin, env, *args):
    out = subprocess.run([admin, "keys", "create", *args], env=env, check=True,
                         capture_output=True, text=True).stdout
    issued = json.loads(out.splitlines()[0])
    return {"key": issued["key"], "id": issued["id"]}


def shop(api, keys):
    """The shapes an upgrade meets: every kind of record, orders open,
    complete and cancelled for each kind of key, a free key at its plan's
    cap (10) of open orders, and category names whose claims the old code
    keyed differently (full-width, accented)."""
    staff, free, pro = keys["staff"]["key"], keys["free"]["key"], keys["pro"]["key"]
    categories = [api.call("POST", "/categories", staff, {"name": name, "description": text})
                  for name, text in [("Ｄｏｇｓ", "full-width"), ("Félins", "accented"),
                                     ("Birds", "plain ASCII"), ("ÉCUREUILS", "accented capitals"),
                                     ("Große Katzen", "sharp s: case folding is not lower case")]]
    pets = []
    for i, category in enumerate(categories):
        for j in range(3):
            pet = api.call("POST", "/pets", staff,
                           {"name": f"pet {i}-{j}", "categoryId": category["id"]})
            api.call("PUT", f"/store/inventory/{pet['id']}", staff, {"quantity": 50})
            pets.append(pet)

    def place(key, n, ship_date=None):
        placed: list[dict] = []
        for k in range(n):
            body = {"petId": pets[(len(placed) * 5 + k + n) % len(pets)]["id"], "quantity": 1 + k % 3}
            if ship_date:
                body["shipDate"] = ship_date
            placed.append(api.call("POST", "/store/orders", key, body))
        return placed

    # The free key: 13 placed, 2 completed by staff, 1 cancelled by itself:
    # 10 open, its plan's cap under this release.
    free_orders = place(free, 13)
    for order in free_orders[:2]:
        api.call("PATCH", f"/store/orders/{order['id']}", staff, {"complete": True})
    api.call("DELETE", f"/store/orders/{free_orders[2]['id']}", free)
    # The pro key: 6 open (one shipping far ahead), 2 complete, 2 cancelled.
    pro_orders = place(pro, 9) + place(pro, 1, "2027-03-01T00:00:00Z")
    for order in pro_orders[:2]:
        api.call("PATCH", f"/store/orders/{order['id']}", staff, {"complete": True})
    for order in pro_orders[2:4]:
        api.call("DELETE", f"/store/orders/{order['id']}", pro)
    # Staff's own: 2 open, 1 complete.
    staff_orders = place(staff, 3)
    api.call("PATCH", f"/store/orders/{staff_orders[0]['id']}", staff, {"complete": True})


def dump(endpoint, out_dir):
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="local", aws_secret_access_key="local")
    items: list[dict] = []
    start: dict = {}
    while True:
        page = client.scan(TableName=TABLE, ConsistentRead=True, **start)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            break
        start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
    items.sort(key=lambda item: (item["PK"]["S"], item["SK"]["S"]))
    with open(out_dir / "items.jsonl", "w", encoding="utf-8") as out:
        for item in items:
            out.write(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n")
    return len(items)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    local, admin = (str(Path(p).resolve()) for p in sys.argv[1:3])
    out_dir = Path(sys.argv[3]) if len(sys.argv) == 4 else ROOT / "tests/fixtures/release-1.0.0"
    out_dir.mkdir(parents=True, exist_ok=True)
    java, endpoint = start_dynamodb()
    port = free_port()
    env = dict(os.environ, AWS_ENDPOINT_URL_DYNAMODB=endpoint, AWS_ACCESS_KEY_ID="local",
               AWS_SECRET_ACCESS_KEY="local", AWS_REGION="us-east-1", TABLE_NAME=TABLE,
               RATE_LIMIT_TABLE_NAME=f"{TABLE}-limits", PORT=str(port))
    server = subprocess.Popen([local], env=env, stdout=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_serving(base, server)
        keys = {
            "free": create_key(admin, env, "--plan", "free", "--name", "fixture free"),
            "pro": create_key(admin, env, "--plan", "pro", "--name", "fixture pro"),
            "staff": create_key(admin, env, "--plan", "enterprise", "--role", "staff",
                                "--per-minute", "100000", "--per-day", "10000000",
                                "--name", "fixture staff"),
        }
        shop(Api(base), keys)
        count = dump(endpoint, out_dir)
        with open(out_dir / "keys.json", "w", encoding="utf-8") as out:
            json.dump(keys, out, indent=2)
            out.write("\n")
        print(f"{count} items in {out_dir / 'items.jsonl'}")
    finally:
        server.terminate()
        server.wait()
        java.terminate()
        java.wait()


if __name__ == "__main__":
    main()
