"""The layout gate's comparison with the dev stage (gates.layout_check;
docs/upgrade.md, "What the gate compares").

The dev stage runs the last main's template at its defaults. An index the
last release never had (one of an unreleased migration) may have changed
keys or projection on main since dev created it: CloudFormation refuses
that in place, so the dev job rebuilds it before its deploy
(gates.rebuild_indexes: deleted, then created as the new template
defines it, one update each, from `rebuild_states`). This proves each of
those updates and the deploy after them; an index the last release has,
or any other refusal, fails.
"""

from __future__ import annotations

import json
import subprocess
import tempfile

from gates.layout_check import INDEX_UPDATABLE, Rendered, by_name, decode, update_findings
from gates.repo import ROOT


def index_rebuilds(old: dict, new: dict) -> list[str]:
    """The indexes in both table definitions whose keys or projection differ."""
    before, after = by_name(old.get("GlobalSecondaryIndexes")), by_name(new.get("GlobalSecondaryIndexes"))

    def fixed(index: dict) -> dict:
        return {k: v for k, v in index.items() if k not in INDEX_UPDATABLE}
    return sorted(name for name in before.keys() & after.keys() if fixed(before[name]) != fixed(after[name]))


def rebuild_states(old: dict, new: dict) -> list[tuple[str, dict]]:
    """The table definitions that take `old`'s indexes to `new`'s when some
    changed keys or projection: each such index deleted, then created as
    `new` defines it, one per update, the rest as `old` has them. Each state
    is (what it does, the table's properties: `old`'s with its
    GlobalSecondaryIndexes and AttributeDefinitions at that state)."""
    types = {a["AttributeName"]: a["AttributeType"]
             for a in old.get("AttributeDefinitions", []) + new.get("AttributeDefinitions", [])}
    wanted = by_name(new.get("GlobalSecondaryIndexes"))
    current = list(old.get("GlobalSecondaryIndexes") or [])
    states = []
    for name in index_rebuilds(old, new):
        for what, indexes in ((f"delete {name}", [i for i in current if i["IndexName"] != name]),
                              (f"create {name} as template.yaml defines it",
                               [i for i in current if i["IndexName"] != name] + [wanted[name]])):
            keys = [k["AttributeName"] for k in old.get("KeySchema", [])]
            keys += [k["AttributeName"] for i in indexes for k in i["KeySchema"]]
            defined = [{"AttributeName": a, "AttributeType": types[a]} for a in dict.fromkeys(keys)]
            states.append((what, old | {"GlobalSecondaryIndexes": indexes, "AttributeDefinitions": defined}))
            current = indexes
    return states


def table(name: str, resource: dict, properties: dict) -> Rendered:
    """A rendered template holding only table `name` with `properties`."""
    return Rendered({"Resources": {name: resource | {"Properties": properties}}}, {})


def dev_check(dev: dict, current: dict, released: dict, label: str) -> tuple[bool, list[str]]:
    """The dev stage (`dev` at its defaults) to `current` at its defaults,
    as the dev job deploys it, after the rebuilds it makes first."""
    before, after, shipped = Rendered(dev, {}), Rendered(current, {}), Rendered(released, {})
    lines = [f"template.yaml over the dev stage ({label}):"]
    passes = True
    repaired = dict(before.resources)
    for name, resource in before.resources.items():
        if resource["Type"] != "AWS::DynamoDB::Table" or name not in after.resources:
            continue
        old, new = resource["Properties"], after.resources[name]["Properties"]
        rebuilds = index_rebuilds(old, new)
        if not rebuilds:
            continue
        released_indexes = by_name((shipped.resources.get(name) or {}).get("Properties", {})
                                   .get("GlobalSecondaryIndexes"))
        lines.append(f"  {name} {rebuilds}: keys or projection changed since the last main; rebuilt by the "
                     "dev job before its deploy (gates.rebuild_indexes dev)")
        for index in sorted(set(rebuilds) & released_indexes.keys()):
            lines.append(f"    FAILED: the last release has {index}: a change to it needs a migration "
                         "(docs/upgrade.md), not a rebuild")
            passes = False
        state = old
        for what, next_state in rebuild_states(old, new):
            changed = update_findings(table(name, resource, state), table(name, resource, next_state))
            lines.append(f"    {what}: {'one update' if not changed else 'FAILED'}")
            lines += [f"      {finding}" for finding in changed]
            passes &= not changed
            state = next_state
        repaired[name] = resource | {"Properties": state}
    before.resources = repaired
    rest = update_findings(before, after)
    lines.append(f"  the deploy: {'one update' if not rest else 'FAILED'}"
                 + ("" if rest else ": nothing CloudFormation cannot apply, nothing replaced"))
    lines += [f"    {finding}" for finding in rest]
    return passes and not rest, lines


def git_template(rev: str) -> str | None:
    shown = subprocess.run(["git", "show", f"{rev}:template.yaml"], cwd=ROOT, capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


def last_main(explicit: str | None) -> tuple[str | None, str]:
    """The dev stage's template (the last main's) and where it came from:
    `explicit`, else `main` when HEAD is not main, else HEAD's first parent
    (a push to main; a pull request's merge commit, whose first parent is
    main)."""
    if explicit:
        return git_template(explicit), f"{explicit}'s template.yaml"

    def rev_parse(rev: str) -> str:
        return subprocess.run(["git", "rev-parse", "--verify", "-q", rev], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    main = rev_parse("main")
    rev = "main" if main and main != rev_parse("HEAD") else "HEAD^"
    return git_template(rev), f"{rev}'s template.yaml"


def decode_text(text: str) -> dict:
    """A template's text as a dict: JSON with the standard library, else
    cfn-lint's YAML decoder (imported only then, layout_check.decode)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        file.write(text)
        file.flush()
        decoded, _ = decode(file.name)
    return decoded
