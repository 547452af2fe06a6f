"""Take a deployed stack from the stored layout it has to the template's, as
the migration in migrations/ says (docs/upgrade.md): each template state a
`sam deploy` of that state (DataLayoutStep) in order, each backfill
`petstore-admin data migrate run` between them, the switch only once
`petstore-admin data migrate status --require-done` passes. Safe to run
again after an interruption: it starts from the state the stack is in.

    petstore-upgrade STAGE --template-file .aws-sam/build/template.yaml [--dry-run] [--yes]
    petstore-upgrade STAGE --pending      exit 1 when the stack still has states to walk
                                            (the release pipeline's check before its deploy)

The last state, the template at its defaults, is the release's own deploy
(the pipeline's, or `sam deploy --config-env STAGE`). Runs with the
operator's credentials: `sam deploy` and the data table's items. A stage
whose samconfig.toml asks to confirm each change set (prod) is asked for
each state's, as `sam deploy --config-env STAGE` would, unless --yes.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib

from gates.repo import ROOT

ADMIN = ["cargo", "run", "-q", "--release", "--bin", "petstore-admin", "--"]


def stack_name(stage: str) -> str:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text()).get(stage, {})
    for command in ("global", "deploy"):
        name = config.get(command, {}).get("parameters", {}).get("stack_name")
        if name:
            return name
    raise SystemExit(f"upgrade: samconfig.toml has no stack_name for the config environment {stage!r}")


def confirms_changesets(stage: str) -> bool:
    """Whether samconfig.toml has `sam deploy --config-env STAGE` ask before each change set."""
    config = tomllib.loads((ROOT / "samconfig.toml").read_text()).get(stage, {})
    return bool(config.get("deploy", {}).get("parameters", {}).get("confirm_changeset", False))


def deploy_command(stage: str, template_file: str, step: str, yes: bool, draining: str | None = None) -> list[str]:
    """The `sam deploy` of one template state; it asks before its change set
    where samconfig.toml asks, unless the operator said --yes. `draining`:
    the DrainingOrderRate to deploy it with while the lists are resharded."""
    overrides = [f"DataLayoutStep={step}"] + ([f"DrainingOrderRate={draining}"] if draining else [])
    command = ["sam", "deploy", "--config-env", stage, "--template-file", template_file,
               "--parameter-overrides", *overrides, "--no-fail-on-empty-changeset"]
    if yes or not confirms_changesets(stage):
        command.append("--no-confirm-changeset")
    return command


def capacity(template: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """template.yaml's default OrderRate and its Capacity mapping: each
    rate's (order list shards, pet list shards)."""
    default = re.search(r'^  OrderRate:\n(?:    .*\n)*?    Default: "?(\w+)"?', template, re.M)
    rows = re.findall(r'^    "?(\w+)"?: \{ OrderListShards: (\d+), PetListShards: (\d+),', template, re.M)
    if default is None or not rows:
        raise SystemExit("upgrade: template.yaml has no OrderRate and Capacity")
    return default.group(1), {rate: (int(orders), int(pets)) for rate, orders, pets in rows}


def draining_rate(stack: dict[str, str], template: str) -> str | None:
    """The DrainingOrderRate the walk deploys with, or None when the stack's
    list entries are all under the template's default shard counts already.

    A stack keyed its lists under OrderListShards and PetListShards (1.1.0
    and before: 32 and 1 by default) or under its OrderRate's; while a
    reshard is under way (its DrainingOrderRate set) under that rate's. The
    walk drains the smallest rate whose counts cover what the stack has, so
    no order is hidden before `data reshard` has moved it (docs/upgrade.md,
    "Changing OrderRate")."""
    default, rates = capacity(template)
    if stack.get("DrainingOrderRate", "none") != "none":
        return stack["DrainingOrderRate"]
    if "OrderRate" in stack:
        had = rates[stack["OrderRate"]]
    else:
        had = (int(stack.get("OrderListShards", "32")), int(stack.get("PetListShards", "1")))
    new = rates[default]
    if had[0] <= new[0] and had[1] <= new[1]:
        return None
    covering = [r for r, c in rates.items() if r != "none" and c[0] >= had[0] and c[1] >= had[1]]
    return min(covering, key=lambda r: rates[r]) if covering else None


def aws(*args: str) -> dict:
    done = subprocess.run(["aws", *args, "--output", "json"], capture_output=True, text=True)
    if done.returncode != 0:
        raise LookupError(done.stderr.strip())
    return json.loads(done.stdout or "{}")


def stack_parameters(stack: str) -> dict[str, str]:
    """The deployed stack's parameters, by name."""
    described = aws("cloudformation", "describe-stacks", "--stack-name", stack)["Stacks"][0]
    return {p["ParameterKey"]: p["ParameterValue"] for p in described.get("Parameters", [])}


def pending(migration: dict, step: str | None) -> list[dict]:
    """The migration's steps after the stack's state, the last one (the
    release's own deploy) left out."""
    steps = migration["steps"]
    if step is not None:
        at = next(i for i, s in enumerate(steps) if s["kind"] == "template" and s["step"] == step)
        steps = steps[at + 1:]
    return steps[:-1] if steps and steps[-1]["kind"] == "template" else steps


def the_migration() -> dict:
    """The last migration that changes the layout: one that only declares
    what a release adds (0002-webhooks: queues, items) has nothing to run."""
    migrations = [json.loads(path.read_text()) for path in sorted((ROOT / "migrations").glob("[0-9]*.json"))]
    return [m for m in migrations if m["fromLayout"] != m["toLayout"]][-1]


def run(command: list[str], dry_run: bool) -> None:
    print("upgrade: " + " ".join(command), flush=True)
    if not dry_run:
        subprocess.run(command, check=True, cwd=ROOT)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("stage")
    parser.add_argument("--template-file", default=".aws-sam/build/template.yaml")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--pending", action="store_true")
    parser.add_argument("--yes", action="store_true",
                        help="deploy each state without asking, even where samconfig.toml asks (prod)")
    args = parser.parse_args()
    stack = stack_name(args.stage)
    try:
        parameters = stack_parameters(stack)
    except LookupError:
        print(f"upgrade: no stack {stack}: a new stack is created at the template's layout, nothing to walk")
        return 0
    # None: a stack of a release before layouts were declared (layout 1).
    step = parameters.get("DataLayoutStep")
    migration = the_migration()
    todo = [] if step == "done" else pending(migration, step)
    draining = draining_rate(parameters, (ROOT / "template.yaml").read_text())
    if args.pending:
        if todo:
            print(f"::error::{stack} is at DataLayoutStep={step or '(layout 1)'}: run gates.upgrade "
                  f"{args.stage} first (docs/upgrade.md); this deploy would fail or break its lists")
        # A stack already draining has had the walk's reshard (upgrade.py
        # runs it right after that deploy, and stops when it fails).
        draining = draining if parameters.get("DrainingOrderRate", "none") == "none" else None
        if draining:
            print(f"::error::{stack}'s lists are keyed over more shards than this template's OrderRate: run "
                  f"gates.upgrade {args.stage} first (DrainingOrderRate={draining}, data reshard; "
                  "docs/upgrade.md, \"Changing OrderRate\"); this deploy would hide orders until a reshard")
        return 1 if todo or draining else 0
    table = aws("cloudformation", "describe-stack-resource", "--stack-name", stack,
                "--logical-resource-id", "DataTable")["StackResourceDetail"]["PhysicalResourceId"]
    print(f"upgrade: {stack} ({table}) at DataLayoutStep={step or '(layout 1)'}; "
          f"{migration['name']}: {len(todo)} steps before the release's own deploy")
    for entry in todo:
        if entry["kind"] == "backfill":
            run([*ADMIN, "data", "migrate", "run", "--table", table, "--only", entry["name"]], args.dry_run)
            continue
        if entry.get("switch"):  # the functions read the new layout: only once every backfill is done
            # A backfill with items left over runs another pass first: until
            # the switch, layout 1 creates pets that hold their stock
            # (stock-items); status passes with such pets left, which both
            # layouts serve.
            run([*ADMIN, "data", "migrate", "run", "--table", table], args.dry_run)
            run([*ADMIN, "data", "migrate", "status", "--table", table, "--require-done"], args.dry_run)
        run(deploy_command(args.stage, args.template_file, entry["step"], args.yes, draining), args.dry_run)
        if entry.get("switch"):
            # The pets layout 1 created until the canary's old version stopped.
            run([*ADMIN, "data", "migrate", "run", "--table", table], args.dry_run)
            run([*ADMIN, "data", "migrate", "status", "--table", table, "--require-done"], args.dry_run)
    if draining:
        # Writers under the new counts, readers over the old ones too; then
        # every entry moved; the release's own deploy drops the old shards.
        run(deploy_command(args.stage, args.template_file, "done", args.yes, draining), args.dry_run)
        run([*ADMIN, "data", "reshard"], args.dry_run)
    print(f"upgrade: {stack} is ready for the release's own deploy (DataLayoutStep=done)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
