"""The gate on the stored layout (`make layout-check`; docs/upgrade.md).

Every release deploys over the stack of the release before it (contract
section 10). CloudFormation applies some changes to a stateful resource in
place, refuses others outright (an index's keys or projection; more than one
index created or deleted in one update), and applies a few by replacing the
resource: a new, empty table. This compares the stateful resources of
template.yaml with those of the last released template
(contract/released/template.yaml, moved by `make contract-release` with the
released contract) and fails on a change CloudFormation cannot apply in one
update or would apply by replacement, naming the resource, the property and
what CloudFormation would do.

Such a change ships only inside a migration (migrations/NNNN-*.json, run by
`petstore-admin data migrate`) from the released layout to this one: the
migration names the template states in order, each a value of the
template's step parameter (`DataLayoutStep`), and this proves each state is
one update from the one before it: released -> step 1 -> ... -> the
template at its defaults.

A stateful resource new since the release (a queue holds messages a
replacement would lose, as a table holds items) must be declared by a
migration's `adds.resources` (migrations/0002-webhooks.json: new queues and
items, no layout change, nothing to run), so one is never added unawares;
and a declared one must exist.

The dev stage is deployed from every push to main, so it may be ahead of
the release: it already has what main added since (an index of an
unreleased migration, as main first defined it). The same comparison runs
from the last main's template (the dev stage's) to this one, as the dev
job deploys it: one update at the defaults. An index the last release never
had whose keys or projection changed since (refused by CloudFormation) is
rebuilt by the dev job before its deploy (gates.rebuild_indexes:
deleted, then created as this template defines it, one update each), and
this proves each of those updates; any other refusal fails.

    petstore-layout-check [--root DIR] [--dev-baseline REV | --dev-template FILE]

(gates.layout_gate, the command: this comparison, then gates.layout_dev's.)
The root holds template.yaml, contract/released/template.yaml and
migrations/; tools/gates/tests/test_layout_check.py runs this against altered
copies. The last main is `--dev-baseline` (or $LAYOUT_DEV_BASELINE), else
`main` when HEAD is not main, else HEAD's first parent (a push to main, or
a pull request's merge commit: the workflows check out two commits).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gates.cfn_intrinsics import NO_VALUE, Intrinsics

BASELINE = Path("contract/released/template.yaml")



def decode(path: str) -> tuple[Any, list]:
    """A template file decoded by cfn-lint's loader (its YAML tags: !Ref,
    !Sub...), as (template, problems). Imported here, not at the top: the
    dev job's rebuild (gates.rebuild_indexes) imports this module with
    no third-party package installed, on the JSON the build job decoded."""
    from cfnlint.decode import decode as cfn_decode
    return cfn_decode(path)


def read_template(path: str | Path) -> dict:
    """A template file as a dict: JSON with the standard library (what the
    build job writes: packaged.json, released.json), else cfn-lint's YAML
    decoder."""
    text = Path(path).read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    decoded, problems = decode(str(path))
    if decoded is None or problems:
        raise SystemExit(f"cannot read {path}: {problems}")
    return decoded


# Resources that hold data a deploy must not lose: replaced, each is a new,
# empty one. Which of their properties replace them is their provider
# schemas' to say (replacing()).
STATEFUL = ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable", "AWS::SQS::Queue", "AWS::S3::Bucket")
# Replacing, by CloudFormation's reference ("Update requires: Replacement"),
# and missing from the provider schema cfn-lint ships: a table's local
# secondary indexes are made with it. tests/test_layout_check.py fails once
# the schema lists one of these, so that it goes from here.
NOT_IN_SCHEMA = {"AWS::DynamoDB::Table": ("/properties/LocalSecondaryIndexes",)}
# What CloudFormation may change on an existing global secondary index.
INDEX_UPDATABLE = {"ProvisionedThroughput", "ContributorInsightsSpecification", "OnDemandThroughput",
                   "WarmThroughput"}


@dataclass
class Finding:
    resource: str
    what: str        # the property, as a path
    change: str      # what changed
    effect: str      # what CloudFormation would do

    def __str__(self) -> str:
        return f"{self.resource} {self.what}: {self.change}: {self.effect}"


class Rendered(Intrinsics):
    """A template with its conditions decided for one set of parameters;
    references to resources and pseudo parameters stay as names."""

    def __init__(self, template: dict, overrides: dict[str, str]):
        self.parameters = {name: str(spec.get("Default", "")) for name, spec in
                           template.get("Parameters", {}).items()}
        self.parameters.update(overrides)
        self.conditions = template.get("Conditions", {})
        self.mappings = template.get("Mappings", {})
        self.resources = {}
        for name, resource in template.get("Resources", {}).items():
            if "Condition" in resource and not self.condition(resource["Condition"]):
                continue
            if resource.get("Type") not in STATEFUL:
                continue
            self.resources[name] = {
                "Type": resource["Type"],
                "DeletionPolicy": resource.get("DeletionPolicy", "Delete"),
                "UpdateReplacePolicy": resource.get("UpdateReplacePolicy", "Delete"),
                "Properties": self.resolve(resource.get("Properties", {})),
            }

    def ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        return self.parameters.get(name, f"<{name}>")

    def get_att(self, logical: str, attribute: str) -> Any:
        return f"<{logical}.{attribute}>"


def layout_of(template: dict) -> tuple[int, str | None]:
    """The layout version a template declares (Metadata.StoredLayout; a
    template before layouts were declared is layout 1) and its step parameter."""
    declared = template.get("Metadata", {}).get("StoredLayout", {})
    return int(declared.get("Version", 1)), declared.get("StepParameter")


def by_name(indexes: list | None) -> dict[str, dict]:
    return {index["IndexName"]: index for index in indexes or []}


def table_findings(name: str, old: dict, new: dict) -> list[Finding]:
    found = []
    old_indexes = by_name(old.get("GlobalSecondaryIndexes"))
    new_indexes = by_name(new.get("GlobalSecondaryIndexes"))
    for index in sorted(old_indexes.keys() & new_indexes.keys()):
        for part in sorted((old_indexes[index].keys() | new_indexes[index].keys()) - INDEX_UPDATABLE - {"IndexName"}):
            before, after = old_indexes[index].get(part), new_indexes[index].get(part)
            if before != after:
                found.append(Finding(name, f"GlobalSecondaryIndexes[{index}].{part}", describe(before, after),
                                     "CloudFormation cannot update an index's keys or projection: "
                                     "the update fails and rolls back"))
    created = sorted(new_indexes.keys() - old_indexes.keys())
    deleted = sorted(old_indexes.keys() - new_indexes.keys())
    if len(created) + len(deleted) > 1:
        found.append(Finding(name, "GlobalSecondaryIndexes",
                             f"created {created or 'none'}, deleted {deleted or 'none'}",
                             "CloudFormation creates or deletes at most one index per update: "
                             "the update fails and rolls back"))
    old_types = {a["AttributeName"]: a["AttributeType"] for a in old.get("AttributeDefinitions", [])}
    for attribute in new.get("AttributeDefinitions", []):
        before = old_types.get(attribute["AttributeName"])
        if before and before != attribute["AttributeType"]:
            found.append(Finding(name, f"AttributeDefinitions[{attribute['AttributeName']}]",
                                 f"type {before} -> {attribute['AttributeType']}",
                                 "the items already written keep the old type: the key or index "
                                 "cannot change in place"))
    ttl_before = (old.get("TimeToLiveSpecification") or {}).get("AttributeName")
    ttl_after = (new.get("TimeToLiveSpecification") or {}).get("AttributeName")
    if ttl_before and ttl_before != ttl_after:
        found.append(Finding(name, "TimeToLiveSpecification.AttributeName", describe(ttl_before, ttl_after),
                             "DynamoDB changes TTL at most once an hour and items keep the old "
                             "attribute: expiry stops for what was written"))
    stream_before = (old.get("StreamSpecification") or {}).get("StreamViewType")
    stream_after = (new.get("StreamSpecification") or {}).get("StreamViewType")
    if stream_before and stream_before != stream_after:
        found.append(Finding(name, "StreamSpecification.StreamViewType", describe(stream_before, stream_after),
                             "a stream's view type cannot change: the stream is closed and a new one "
                             "opened, and its readers lose what lies between"))
    billing_before, billing_after = old.get("BillingMode", "PROVISIONED"), new.get("BillingMode", "PROVISIONED")
    if billing_before != billing_after:
        found.append(Finding(name, "BillingMode", describe(billing_before, billing_after),
                             "DynamoDB switches billing mode once per 24 hours: a rollback of this "
                             "update would fail"))
    return found


@cache
def replacing(kind: str) -> tuple[str, ...]:
    """The properties of a resource of type `kind` whose change replaces it,
    as JSON pointers (/properties/KeySchema): its provider schema's
    createOnlyProperties and conditionalCreateOnlyProperties (those that
    replace it for some changes: a table's KeySchema), from the schemas
    cfn-lint ships (us-east-1's), and NOT_IN_SCHEMA. cfn-lint is imported
    here, as in decode(): gates.rebuild_indexes imports this module on the
    standard library alone, and never compares resources."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", kind).schema
    return tuple(sorted({*schema.get("createOnlyProperties", []), *schema.get("conditionalCreateOnlyProperties", []),
                         *NOT_IN_SCHEMA.get(kind, ())}))


def at(properties: dict, pointer: str) -> Any:
    """The value at a JSON pointer under /properties, or None."""
    value: Any = properties
    for part in pointer.removeprefix("/properties/").split("/"):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def resource_findings(name: str, old: dict, new: dict | None) -> list[Finding]:
    if new is None:
        return [Finding(name, "(resource)", "removed",
                        f"CloudFormation deletes it (DeletionPolicy {old['DeletionPolicy']}) with its data")]
    if new["Type"] != old["Type"]:
        return [Finding(name, "Type", describe(old["Type"], new["Type"]), "CloudFormation replaces it")]
    found = []
    for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
        if old[policy] == "Retain" and new[policy] != "Retain":
            found.append(Finding(name, policy, describe(old[policy], new[policy]),
                                 "the data is no longer kept when the resource is removed or replaced"))
    before, after = old["Properties"], new["Properties"]
    for pointer in replacing(old["Type"]):
        was, now = at(before, pointer), at(after, pointer)
        if was != now:
            found.append(Finding(name, pointer.removeprefix("/properties/").replace("/", "."), describe(was, now),
                                 "CloudFormation replaces the resource: a new, empty one"))
    if old["Type"] == "AWS::DynamoDB::Table":
        found += table_findings(name, before, after)
    return found


def describe(before: Any, after: Any) -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        return "; ".join(f"{k}: {describe(before.get(k), after.get(k))}" for k in keys)
    if isinstance(before, list) and isinstance(after, list) and all(isinstance(x, str) for x in before + after):
        added, removed = [x for x in after if x not in before], [x for x in before if x not in after]
        return ", ".join(filter(None, [f"+{added}" if added else "", f"-{removed}" if removed else ""])) or "reordered"
    return f"{json.dumps(before)} -> {json.dumps(after)}"


def update_findings(old: Rendered, new: Rendered) -> list[Finding]:
    """What CloudFormation cannot do, or does by replacement, going from `old`
    to `new` in one update. Resources new in `new` are creations: allowed."""
    found = []
    for name, resource in old.resources.items():
        found += resource_findings(name, resource, new.resources.get(name))
    return found


def migrations(root: Path) -> list[dict]:
    return [json.loads(path.read_text()) | {"file": str(path.relative_to(root))}
            for path in sorted((root / "migrations").glob("[0-9]*.json"))]


def declared_findings(old: Rendered, new: Rendered, root: Path) -> list[str]:
    """New stateful resources no migration declares, and declared ones the
    template lacks (the report's lines; none when all agree)."""
    declared = {name: m["file"] for m in migrations(root) for name in m.get("adds", {}).get("resources", [])}
    lines = []
    for name in sorted(new.resources.keys() - old.resources.keys()):
        kind = new.resources[name]["Type"]
        if name in declared:
            lines.append(f"  new {kind} {name}: declared by {declared[name]}")
        else:
            lines.append(f"  FAILED: new {kind} {name} is declared by no migration (adds.resources in "
                         "migrations/*.json): a stateful resource is added on purpose, with what it holds")
    for name in sorted(declared.keys() - new.resources.keys()):
        lines.append(f"  FAILED: {declared[name]} declares {name}, which template.yaml has not "
                     "(or not as a stateful resource)")
    return lines


def check(root: Path) -> tuple[bool, list[str]]:
    """(passes, the report's lines)."""
    released, problems = decode(str(root / BASELINE))
    current, more = decode(str(root / "template.yaml"))
    if released is None or current is None or problems or more:
        return False, [f"cannot read {BASELINE} or template.yaml"]
    (old_layout, _), (new_layout, step_parameter) = layout_of(released), layout_of(current)
    lines = [f"template.yaml (layout {new_layout}) over {BASELINE} (layout {old_layout}):"]
    declarations = declared_findings(Rendered(released, {}), Rendered(current, {}), root)
    lines += declarations
    if any("FAILED" in line for line in declarations):
        return False, lines
    direct = update_findings(Rendered(released, {}), Rendered(current, {}))
    if direct:
        lines.append("  in one update, CloudFormation would fail or replace:")
    for finding in direct:
        lines.append(f"    {finding}")
    if not direct and old_layout == new_layout:
        lines.append("  one update: nothing CloudFormation cannot apply, nothing replaced")
        return True, lines
    if old_layout == new_layout:
        lines.append(f"  FAILED: these need a migration: declare the next layout (Metadata.StoredLayout.Version "
                     f"{old_layout + 1}) and a migration to it in migrations/ (docs/upgrade.md)")
        return False, lines
    carrying = [m for m in migrations(root) if m.get("fromLayout") == old_layout and m.get("toLayout") == new_layout
                and m.get("fromLayout") != m.get("toLayout")]
    if not carrying:
        lines.append(f"  FAILED: no migration in migrations/ takes layout {old_layout} to layout {new_layout}; "
                     "see docs/upgrade.md, \"Changing the stored layout\"")
        return False, lines
    migration = carrying[0]
    return walk(migration, released, current, step_parameter, lines)


def walk(migration: dict, released: dict, current: dict, step_parameter: str | None,
         lines: list[str]) -> tuple[bool, list[str]]:
    """Each template state the migration names is one update from the one before."""
    steps = [s["step"] for s in migration["steps"] if s["kind"] == "template"]
    lines.append(f"  carried by {migration['file']} ({migration['name']}): released -> "
                 + " -> ".join(f"{step_parameter}={s}" for s in steps))
    if not step_parameter:
        lines.append("  FAILED: template.yaml's Metadata.StoredLayout names no StepParameter")
        return False, lines
    allowed = [str(v) for v in current["Parameters"].get(step_parameter, {}).get("AllowedValues", [])]
    default = str(current["Parameters"].get(step_parameter, {}).get("Default", ""))
    if not steps or steps[-1] != default:
        lines.append(f"  FAILED: the migration's last template state must be {step_parameter}'s default ({default})")
        return False, lines
    passes, before, label = True, Rendered(released, {}), "released"
    for step in steps:
        if step not in allowed:
            lines.append(f"  FAILED: {step_parameter}={step} is not one of its AllowedValues {allowed}")
            return False, lines
        after = Rendered(current, {step_parameter: step})
        found = update_findings(before, after)
        verdict = "one update" if not found else "FAILED"
        lines.append(f"    {label} -> {step}: {verdict}")
        lines += [f"      {finding}" for finding in found]
        passes &= not found
        before, label = after, step
    return passes, lines
