"""Rehearse the dev job's index rebuild offline, in moto (make upgrade-rehearsal;
docs/upgrade.md, "What the gate compares").

The dev stage runs the last main's template. When an index the last release
never had changed keys or projection since, gates.rebuild_indexes takes
the stack to this template one update at a time (gates.layout_dev's
states, which make layout-check proves are each one update). This:

1. creates the last release's stack (as make upgrade-rehearsal does), loads
   the last release's data, and brings its data table to the dev stage's
   indexes (the last main's template at its defaults) with both backfills
   run: the table as the dev stage has it;
2. serves it with this release's code (DATA_LAYOUT=2) and applies each
   rebuild state through DynamoDB's API, as CloudFormation's update makes
   it: the indexes and projections after each are the state's, at most one
   index created or deleted each, and every list whose index exists answers;
3. ends with every list complete (paged to its end against a scan) and
   `data check` sound.

When the last main needs no rebuild (it has this template's indexes), the
dev stage is taken to be this template with GSI4v2 projecting keys only, so
a rebuild is always rehearsed. What moto cannot show: the stack updates
themselves and the minutes DynamoDB takes to fill a new index, during which
the lists on it answer 500 on dev.
"""

from __future__ import annotations

import json
import sys
import time

from cfnlint.decode import decode

from gates import layout_check, layout_dev
from gates.repo import ROOT

# Each list the service serves from an index, and that index.
LISTS = {"/pets?limit=100": "GSI1v2", "/categories?limit=100": "GSI1v2", "/store/orders?limit=100": "GSI1v2",
         "/store/orders?complete=false&limit=100": "GSI2v2", "/pets?status=available&limit=100": "GSI2v2",
         "/store/inventory?limit=100": "GSI5"}


def rehearsal_module():
    from gates import upgrade_rehearsal as module
    return module


def data_tables() -> tuple[dict, dict, str]:
    """The data table as the dev stage has it and as this template wants it."""
    current, _ = decode(str(ROOT / "template.yaml"))
    wanted = layout_check.Rendered(current, {}).resources["DataTable"]["Properties"]
    text, label = layout_dev.last_main(None)
    if text is not None:
        dev = layout_check.Rendered(layout_dev.decode_text(text), {}).resources["DataTable"]["Properties"]
        if layout_dev.index_rebuilds(dev, wanted):
            return dev, wanted, label
    dev = json.loads(json.dumps(wanted))
    for index in dev["GlobalSecondaryIndexes"]:
        if index["IndexName"] == "GSI4v2":
            index["Projection"] = {"ProjectionType": "KEYS_ONLY"}
    return dev, wanted, "this template with GSI4v2 projecting keys only (the last main needs no rebuild)"


def shape(ddb, table: str) -> dict[str, dict]:
    described = ddb.describe_table(TableName=table)["Table"].get("GlobalSecondaryIndexes", [])
    return {i["IndexName"]: {"KeySchema": i["KeySchema"], "Projection": i["Projection"]} for i in described}


def wanted_shape(properties: dict) -> dict[str, dict]:
    return {i["IndexName"]: {"KeySchema": i["KeySchema"], "Projection": i["Projection"]}
            for i in properties["GlobalSecondaryIndexes"]}


def apply(ddb, table: str, properties: dict) -> int:
    """Takes the table's indexes to `properties`' as CloudFormation would:
    deletions, then creations; how many indexes changed."""
    want, got = wanted_shape(properties), shape(ddb, table)
    gone = sorted(name for name in got if name not in want or got[name] != want[name])
    new = sorted(name for name in want if name not in got or got[name] != want[name])
    for name in gone:
        ddb.update_table(TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": name}}])
    for name in new:
        ddb.update_table(TableName=table, AttributeDefinitions=properties["AttributeDefinitions"],
                         GlobalSecondaryIndexUpdates=[{"Create": {"IndexName": name, **want[name]}}])
    return len(gone) + len(new)


def rehearse(ur, emulator, dr, steps) -> None:
    started = time.monotonic()
    checks = dr.Checks()
    resolver = ur.create_released(emulator, dr, checks)
    if not steps.step("the stack of the last release created", started, resolver is not None and not checks.failed,
                      "; ".join(checks.failed)):
        return
    stack = ur.Stack(emulator, resolver)
    from moto.dynamodb.models import dynamodb_backends
    dynamodb_backends["123456789012"][dr.REGION].get_table(stack.table).lambda_event_source_mappings.clear()
    ur.load_fixture(stack)
    ddb = emulator.client("dynamodb")
    dev, wanted, label = data_tables()
    apply(ddb, stack.table, dev)
    ran = [stack.admin("data", "migrate", "run", "--only", name) for name in ("holds", "name-claims", "stock-items")]
    steps.step(f"the dev stage's table: {label}", started,
               shape(ddb, stack.table) == wanted_shape(dev) and all(r.returncode == 0 for r in ran),
               f"indexes {sorted(shape(ddb, stack.table))}")
    server = ur.Server(stack, "2")
    staff = ur.key_of(stack, "--role", "staff", "--plan", "business")
    try:
        for what, state in layout_dev.rebuild_states(dev, wanted):
            started = time.monotonic()
            changed = apply(ddb, stack.table, state)
            got = shape(ddb, stack.table)
            answers = {path: ur.call(server.url, staff, "GET", path)[0] for path, index in LISTS.items() if index in got}
            steps.step(f"{what}", started, got == wanted_shape(state) and changed == 1
                       and all(status == 200 for status in answers.values()),
                       f"indexes {sorted(got)}; {changed} changed; lists on the others: {set(answers.values())}")
        finish(ur, stack, server, staff, steps, wanted)
    finally:
        server.stop()


def finish(ur, stack, server, staff: str, steps, wanted: dict) -> None:
    started = time.monotonic()
    ddb = stack.emulator.client("dynamodb")
    steps.step("the table has this template's indexes", started, shape(ddb, stack.table) == wanted_shape(wanted))
    checked = stack.admin("data", "check")
    steps.step("data check: sound", started, checked.returncode == 0,
               (checked.stdout.strip().splitlines() or [checked.stderr.strip()])[-1])
    items = stack.items()
    stored = {kind: {int(i["id"]["N"]) for i in items if i["SK"]["S"] == kind} for kind in ("PET", "ORDER", "CATEGORY")}
    for path, kind in (("/pets?limit=100", "PET"), ("/store/orders?limit=100", "ORDER"),
                       ("/categories?limit=100", "CATEGORY")):
        listed = {record["id"] for record in ur.every_page(server.url, staff, path)}
        steps.step(f"GET {path} lists every one stored ({len(stored[kind])})", started, listed == stored[kind],
                   f"missing {sorted(stored[kind] - listed)[:5]}" if listed != stored[kind] else "")


def main() -> int:
    ur = rehearsal_module()
    if not ur.ADMIN.is_file() or not ur.LOCAL.is_file():
        ur.subprocess.run(["cargo", "build", "--bin", "petstore-admin", "--bin", "petstore-local"], cwd=ROOT,
                          check=True)
    dr = ur.deploy_rehearsal()
    emulator = ur.SerialEmulator(dr)
    steps = ur.Steps()
    print(f"rebuild-rehearsal: the dev job's index rebuild, on moto at {emulator.endpoint}")
    try:
        rehearse(ur, emulator, dr, steps)
    finally:
        emulator.stop()
    print(f"rebuild-rehearsal: {len(steps.failed)} failed" + (f": {steps.failed}" if steps.failed else ""))
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main())
