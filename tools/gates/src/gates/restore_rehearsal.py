"""Rehearse restoring the data table offline, in moto (make restore-rehearsal).

The stack is created as the deploy rehearsal creates it (its own functions,
imported from gates.deploy_rehearsal). Then, with the operator's own
commands (`petstore-admin data ...`, the debug build):

1. write data (a `data import` of a small store) and check it sound;
2. note the time and take an on-demand backup;
3. damage the data (delete a category, set a stock below 0 on a pet item
   and on a stock item): `data check` must now fail;
4. restore the backup into a new table (`data restore --backup`), and the
   noted point in time into another (`data restore --from --at`);
5. check the settings a restore leaves out are back (stream, TTL, PITR,
   deletion protection, tags) and run `data check` on the restored tables;
6. point the stack at the table restored from the backup (an update of the
   moto stack with DataTableName and DataTableStreamArn, what moto's update
   leaves applied through the service APIs: gates.rehearsal_repoint),
   check every part names it, and read the undamaged data from the table
   the pets function's alias `live` now names.

What each source proves: moto's backup is a faithful snapshot, so restoring
it rehearses the data (the restored table is sound and holds the undamaged
items). moto's point-in-time restore copies the table as it is at the call,
whatever time is asked, so it rehearses the mechanics only (a new table, its
settings), and its check is expected to find the damage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from gates import rehearsal_repoint
from gates.repo import ROOT

ADMIN = ROOT / "target" / "debug" / "petstore-admin"
# The store's pet with a stock item (the others hold their stock themselves).
STOCKED_PET = (1 << 30) + 4


def deploy_rehearsal():
    """The deploy rehearsal (imported when used: it sets up moto's offline
    environment when imported)."""
    from gates import deploy_rehearsal as module
    return module


def admin(endpoint: str, tables: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, AWS_ENDPOINT_URL_DYNAMODB=endpoint, **tables)
    return subprocess.run([str(ADMIN), *args], env=env, capture_output=True, text=True, timeout=600)


def store_lines() -> str:
    """A small sound store as `data export` writes it: a category, its name
    claim, three pets (one with an open order), the order and its key's hold
    count. Two pets are in release 1.0.0's form (stock, openOrders and the
    inventory entry on the pet item); the third has its stock item
    (`PET#<id>`/`STOCK`), as this release writes pets."""
    category, pets, order = 1 << 30, [(1 << 30) + 1, (1 << 30) + 2], (1 << 30) + 3
    stocked = STOCKED_PET
    items: list[dict[str, dict[str, Any]]] = [
        {"PK": {"S": f"CATEGORY#{category}"}, "SK": {"S": "CATEGORY"}, "GSI1PK": {"S": "CATEGORY#0"},
         "id": {"N": str(category)}, "name": {"S": "Dogs"}, "petCount": {"N": "3"}},
        {"PK": {"S": "CATEGORYNAME#dogs"}, "SK": {"S": "CATEGORYNAME"}, "categoryId": {"N": str(category)}},
    ]
    for n, pet in enumerate(pets):
        items.append({"PK": {"S": f"PET#{pet}"}, "SK": {"S": "PET"}, "id": {"N": str(pet)}, "name": {"S": f"Rex {n}"},
                      "categoryId": {"N": str(category)}, "status": {"S": "available"}, "stock": {"N": "5"},
                      "openOrders": {"N": "1" if n == 0 else "0"}, "GSI1PK": {"S": "PET#0"},
                      "GSI2PK": {"S": "PET#STATUS#available#0"}, "GSI3PK": {"S": f"PET#CATEGORY#{category}"},
                      "GSI5PK": {"S": f"PET#{pet}"}})
    items.append({"PK": {"S": f"PET#{stocked}"}, "SK": {"S": "PET"}, "id": {"N": str(stocked)}, "name": {"S": "Rex 2"},
                  "categoryId": {"N": str(category)}, "status": {"S": "available"}, "GSI1PK": {"S": "PET#0"},
                  "GSI2PK": {"S": "PET#STATUS#available#0"}, "GSI3PK": {"S": f"PET#CATEGORY#{category}"}})
    items.append({"PK": {"S": f"PET#{stocked}"}, "SK": {"S": "STOCK"}, "id": {"N": str(stocked)},
                  "status": {"S": "available"}, "stock": {"N": "4"}, "openOrders": {"N": "0"},
                  "GSI5PK": {"S": f"PET#{stocked}"}})
    # An open order holds: it says when it lapses and its key's count has it.
    lapses = (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    items.append({"PK": {"S": f"ORDER#{order}"}, "SK": {"S": "ORDER"}, "id": {"N": str(order)},
                  "petId": {"N": str(pets[0])}, "quantity": {"N": "1"}, "complete": {"BOOL": False}, "ownerId": {"N": "7"},
                  "lapsesAt": {"S": lapses},
                  "GSI1PK": {"S": "ORDER#0"}, "GSI2PK": {"S": "ORDER#COMPLETE#false#0"},
                  "GSI3PK": {"S": f"ORDER#PET#{pets[0]}"}, "GSI4PK": {"S": "ORDER#OWNER#7"}})
    items.append({"PK": {"S": "HOLDS#7"}, "SK": {"S": "HOLDS"}, "openOrders": {"N": "1"}})
    return "".join(json.dumps({"Item": item}) + "\n" for item in items)


class Steps:
    def __init__(self) -> None:
        self.failed: list[str] = []

    def step(self, what: str, started: float, ok: bool = True, detail: str = "") -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what} ({time.monotonic() - started:.2f} s){': ' + detail if detail else ''}")
        if not ok:
            self.failed.append(what)


def rehearse(emulator, dr, steps: Steps) -> None:
    started = time.monotonic()
    checks = dr.Checks()
    # Not at_defaults: its `cargo lambda deploy` check replaces the pets function's environment.
    before = dr.rehearse(emulator, ROOT / "template.yaml", {}, checks, at_defaults=False)
    steps.step("stack created as the deploy rehearsal creates it", started, before is not None and not checks.failed)
    if before is None:
        return
    table = before.physical["DataTable"]
    tables = {"TABLE_NAME": table, "RATE_LIMIT_TABLE_NAME": before.physical["RateLimitTable"]}
    ddb = emulator.client("dynamodb")
    ddb.tag_resource(ResourceArn=ddb.describe_table(TableName=table)["Table"]["TableArn"],
                     Tags=[{"Key": "stage", "Value": "rehearsal"}])

    started = time.monotonic()
    lines = ROOT / ".local" / "restore-rehearsal.jsonl"
    lines.parent.mkdir(exist_ok=True)
    lines.write_text(store_lines())
    imported = admin(emulator.endpoint, tables, "data", "import", "--input", str(lines))
    steps.step("write data (data import)", started, imported.returncode == 0, imported.stdout.strip() or imported.stderr.strip())
    sound = admin(emulator.endpoint, tables, "data", "check")
    steps.step("data check: sound", started, sound.returncode == 0, sound.stdout.strip().splitlines()[-1] if sound.stdout else sound.stderr)

    started = time.monotonic()
    noted = datetime.now(UTC).replace(microsecond=0)
    time.sleep(1)
    backup = ddb.create_backup(TableName=table, BackupName="before-damage")["BackupDetails"]["BackupArn"]
    steps.step(f"note the time ({noted.isoformat()}) and take an on-demand backup", started)

    started = time.monotonic()
    ddb.delete_item(TableName=table, Key={"PK": {"S": f"CATEGORY#{1 << 30}"}, "SK": {"S": "CATEGORY"}})
    ddb.update_item(TableName=table, Key={"PK": {"S": f"PET#{(1 << 30) + 2}"}, "SK": {"S": "PET"}},
                    UpdateExpression="SET stock = :s", ExpressionAttributeValues={":s": {"N": "-5"}})
    ddb.update_item(TableName=table, Key={"PK": {"S": f"PET#{STOCKED_PET}"}, "SK": {"S": "STOCK"}},
                    UpdateExpression="SET stock = :s", ExpressionAttributeValues={":s": {"N": "-4"}})
    damaged = admin(emulator.endpoint, tables, "data", "check")
    found = [json.loads(line)["invariant"] for line in damaged.stdout.splitlines()[:-1]]
    steps.step("damage the data; data check fails", started, damaged.returncode == 1, ", ".join(sorted(set(found))))

    for source, target, expect_sound in [
        (["--backup", backup], f"{table}-restored-backup", True),
        (["--from", table, "--at", noted.isoformat().replace("+00:00", "Z")], f"{table}-restored-pitr", False),
    ]:
        started = time.monotonic()
        restored = admin(emulator.endpoint, tables, "data", "restore", "--to", target, *source)
        detail = restored.stderr.strip()
        if restored.returncode == 0:
            detail = ", ".join(f"{s['step']} {s['seconds']:.2f} s" for s in json.loads(restored.stdout)["steps"])
        steps.step(f"data restore {source[0]} -> {target}", started, restored.returncode == 0, detail)
        check_settings(ddb, target, steps)
        started = time.monotonic()
        checked = admin(emulator.endpoint, tables, "data", "check", "--table", target)
        what = "sound (the undamaged data)" if expect_sound else "finds the damage (moto copies the table as it is now)"
        steps.step(f"data check --table {target}: {what}", started, (checked.returncode == 0) == expect_sound,
                   checked.stdout.strip().splitlines()[-1] if checked.stdout else checked.stderr)
    repoint(emulator, dr, before, table, f"{table}-restored-backup", tables, steps)


def repoint(emulator, dr, before, old: str, new: str, tables: dict[str, str], steps: Steps) -> None:
    """docs/restore.md's `sam deploy --parameter-overrides DataTableName=...
    DataTableStreamArn=...`, then where the stack's functions now read."""
    started = time.monotonic()
    stream = emulator.client("dynamodb").describe_table(TableName=new)["Table"]["LatestStreamArn"]
    overrides = {"DataTableName": new, "DataTableStreamArn": stream}
    checks = dr.Checks()
    at_defaults = dr.translate(ROOT / "template.yaml", {})[1]
    live_before = rehearsal_repoint.live_versions(emulator, before, at_defaults)
    policies_before = rehearsal_repoint.role_policies(emulator, before, at_defaults)
    ddb = emulator.client("dynamodb")
    swaps = [(ddb.describe_table(TableName=old)["Table"]["LatestStreamArn"], stream),
             (ddb.describe_table(TableName=old)["Table"]["TableArn"], ddb.describe_table(TableName=new)["Table"]["TableArn"])]
    after, translated, stack, deferred = rehearsal_repoint.update_stack(emulator, dr, before, ROOT / "template.yaml", overrides, checks)
    steps.step(f"repoint: update the stack with DataTableName={new} DataTableStreamArn=<its stream>", started, not checks.failed)
    started = time.monotonic()
    rehearsal_repoint.apply_what_moto_left(emulator, dr, before, after, stack, deferred, checks)
    steps.step("repoint: what moto's update leaves, through the service APIs (listed below)", started, not checks.failed)
    started = time.monotonic()
    dr.check_outputs(emulator.client("cloudformation"), after, translated, stack, checks)
    dr.check_functions(emulator, after, translated, checks)
    dr.check_stream_mapping(emulator, after, translated, checks)
    dr.check_alarms_and_dashboard(emulator, after, {}, translated, checks)
    dr.check_releases(emulator, after, translated, checks)
    rehearsal_repoint.names_the_restored_table(emulator, after, translated, old, new, stream, live_before, checks)
    rehearsal_repoint.same_policies_but_the_table(policies_before, rehearsal_repoint.role_policies(emulator, after, translated), swaps, checks)
    steps.step(f"repoint: the stack is the template at the new parameters ({checks.passed} checks); functions (live and $LATEST), "
               "roles, stream mapping, alarms, dashboard name the restored table", started, not checks.failed,
               "; ".join(checks.failed[:5]))
    for what, names in checks.gaps.items():
        print(f"       - {what}: {', '.join(dict.fromkeys(names))}")

    started = time.monotonic()
    lam, ddb = emulator.client("lambda"), emulator.client("dynamodb")
    live = lam.get_function_configuration(FunctionName=after.physical["PetsFunction"], Qualifier="live")
    reads = live["Environment"]["Variables"]["TABLE_NAME"]
    category = ddb.get_item(TableName=reads, Key={"PK": {"S": f"CATEGORY#{1 << 30}"}, "SK": {"S": "CATEGORY"}}).get("Item")
    stock = ddb.get_item(TableName=reads, Key={"PK": {"S": f"PET#{(1 << 30) + 2}"}, "SK": {"S": "PET"}})["Item"]["stock"]["N"]
    on_item = ddb.get_item(TableName=reads, Key={"PK": {"S": f"PET#{STOCKED_PET}"}, "SK": {"S": "STOCK"}})["Item"]["stock"]["N"]
    checked = admin(emulator.endpoint, {**tables, "TABLE_NAME": reads}, "data", "check")
    steps.step(f"the pets function's live TABLE_NAME is {reads}: the deleted category is there, the stocks are {stock} "
               f"(pet item) and {on_item} (stock item), data check sound",
               started, reads == new and category is not None and (stock, on_item) == ("5", "4") and checked.returncode == 0,
               checked.stdout.strip().splitlines()[-1] if checked.stdout else checked.stderr)


def check_settings(ddb, table: str, steps: Steps) -> None:
    started = time.monotonic()
    described = ddb.describe_table(TableName=table)["Table"]
    stream = described.get("StreamSpecification", {})
    ttl = ddb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    pitr = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
    tags = ddb.list_tags_of_resource(ResourceArn=described["TableArn"]).get("Tags", [])
    settings = {
        "stream NEW_AND_OLD_IMAGES": stream.get("StreamEnabled") and stream.get("StreamViewType") == "NEW_AND_OLD_IMAGES",
        "TTL on expiresAt": ttl.get("AttributeName") == "expiresAt" and ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"),
        "point-in-time recovery": pitr.get("PointInTimeRecoveryStatus") == "ENABLED",
        "deletion protection": described.get("DeletionProtectionEnabled") is True,
        # Stored layout 2 (docs/upgrade.md): GSI1v2-GSI4v2 and the inventory's GSI5.
        "indexes GSI1v2-GSI4v2, GSI5": sorted(i["IndexName"] for i in described.get("GlobalSecondaryIndexes", []))
        == [*(f"GSI{n}v2" for n in range(1, 5)), "GSI5"],
    }
    missing = [name for name, ok in settings.items() if not ok]
    steps.step(f"{table}: " + ", ".join(settings), started, not missing, f"missing {missing}; tags {tags}" if missing else f"tags {tags}")


def main() -> int:
    if not ADMIN.is_file():
        subprocess.run(["cargo", "build", "--bin", "petstore-admin"], cwd=ROOT, check=True)
    dr = deploy_rehearsal()
    emulator = dr.Emulator(int(os.environ.get("MOTO_PORT", "0")))
    steps = Steps()
    print(f"restore-rehearsal: on moto at {emulator.endpoint}")
    try:
        rehearse(emulator, dr, steps)
    finally:
        emulator.stop()
    print(f"restore-rehearsal: {len(steps.failed)} failed" + (f": {steps.failed}" if steps.failed else ""))
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main())
