"""The layout gate's own fixtures (`make layout-check`): each alters a copy of
the released template (contract/released/template.yaml) the way a release
might, and runs the gate's comparison (gates.layout_check.check) on a
scratch root holding it, the released template and any migration it
declares, or the dev stage's (gates.layout_dev.dev_check). A gate that
passed one of the refused changes, or refused a carried one, fails this.
"""

from __future__ import annotations

import json
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest

from gates import layout_check, layout_dev
from gates.repo import ROOT

pytestmark = pytest.mark.layout_check

RELEASED = (ROOT / "contract" / "released" / "template.yaml").read_text()

GSI1_PROJECTION = "NonKeyAttributes: [name, categoryId, status, description, petId, quantity, shipDate, complete, plan"
GSI5 = "        - IndexName: GSI5\n"
STEP_PARAMETER = """Metadata:
  StoredLayout:
    Version: 2
    StepParameter: LayoutStep
Parameters:
  LayoutStep:
    Type: String
    Default: done
    AllowedValues: ["1", done]
"""


def index(name: str, key: str, condition: str | None = None, projection: str = "KEYS_ONLY") -> str:
    body = (f"IndexName: {name}\n"
            f"          KeySchema:\n"
            f"            - {{ AttributeName: {key}, KeyType: HASH }}\n"
            f"            - {{ AttributeName: id, KeyType: RANGE }}\n"
            f"          Projection:\n"
            f"            ProjectionType: {projection}\n")
    if condition is None:
        return "        - " + body
    body = body.replace("\n          ", "\n            ")
    return f"        - !If\n          - {condition}\n          - {body}          - !Ref AWS::NoValue\n"


def replaced(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, f"the released template no longer has {old!r}: update this fixture"
    return text.replace(old, new, 1)


def with_layout(text: str, conditions: str = "") -> str:
    text = replaced(text, "\nParameters:\n", "\n" + STEP_PARAMETER)
    if conditions:
        text = replaced(text, "\nConditions:\n", f"\nConditions:\n{conditions}")
    return text


MIGRATION = {"id": 1, "name": "fixture", "fromLayout": 1, "toLayout": 2}
EVENTS_DLQ = "  EventsDeadLetterQueue:\n    Type: AWS::SQS::Queue\n    Properties:\n"
NEW_QUEUE = "  FixtureQueue:\n    Type: AWS::SQS::Queue\n    Properties:\n      SqsManagedSseEnabled: true\n"
# A declaration like migrations/0002-webhooks.json: new queues, no layout change.
DECLARES_QUEUE = {"id": 1, "name": "fixture", "fromLayout": 1, "toLayout": 1, "steps": [],
                  "adds": {"resources": ["FixtureQueue"]}}

DATA_TABLE = ("  DataTable:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: Retain\n    UpdateReplacePolicy: Retain\n"
              "    Properties:\n")
LOCAL_INDEX = """      LocalSecondaryIndexes:
        - IndexName: LSI1
          KeySchema:
            - { AttributeName: PK, KeyType: HASH }
            - { AttributeName: id, KeyType: RANGE }
          Projection:
            ProjectionType: KEYS_ONLY
"""
IMPORT_SOURCE = """      ImportSourceSpecification:
        InputFormat: DYNAMODB_JSON
        S3BucketSource: { S3Bucket: an-export }
"""

# (name, the template, the migration or None, passes, words the report must hold)
CASES = [
    ("unchanged", RELEASED, None, True, ["one update"]),
    ("a projection changed",
     replaced(RELEASED, GSI1_PROJECTION, GSI1_PROJECTION.replace("complete, ", "complete, lapsesAt, ")),
     None, False, ["DataTable", "GSI1", "Projection", "cannot update an index"]),
    ("the table's sort key changed",
     replaced(RELEASED, "- { AttributeName: SK, KeyType: RANGE }", "- { AttributeName: id, KeyType: RANGE }"),
     None, False, ["DataTable KeySchema", "replaces the resource"]),
    ("two indexes created at once",
     replaced(RELEASED, GSI5, index("GSI6", "GSI5PK") + index("GSI7", "GSI4PK") + GSI5),
     None, False, ["created ['GSI6', 'GSI7']", "at most one index per update"]),
    # What replaces a table: its provider schema's create-only properties
    # (TableName, ImportSourceSpecification), its conditionally create-only
    # KeySchema (above), and what the schema leaves out (NOT_IN_SCHEMA).
    ("the data table named (replaced: its items lost)",
     replaced(RELEASED, DATA_TABLE, DATA_TABLE + "      TableName: petstore-data\n"), None, False,
     ["DataTable TableName", "replaces the resource"]),
    ("the data table given a local secondary index (replaced)",
     replaced(RELEASED, DATA_TABLE, DATA_TABLE + LOCAL_INDEX), None, False,
     ["DataTable LocalSecondaryIndexes", "replaces the resource"]),
    ("the data table given an import source (replaced)",
     replaced(RELEASED, DATA_TABLE, DATA_TABLE + IMPORT_SOURCE), None, False,
     ["DataTable ImportSourceSpecification", "replaces the resource"]),
    ("DeletionPolicy Retain removed",
     replaced(RELEASED, "    DeletionPolicy: Retain\n    UpdateReplacePolicy: Retain\n",
              "    DeletionPolicy: Delete\n    UpdateReplacePolicy: Retain\n"),
     None, False, ["DataTable DeletionPolicy", "no longer kept"]),
    ("one new index, carried by a migration",
     with_layout(replaced(RELEASED, GSI5, index("GSI6", "GSI5PK") + GSI5)),
     MIGRATION | {"steps": [{"kind": "template", "step": "done"}]}, True, ["released -> done: one update"]),
    ("two new indexes, one per template state",
     with_layout(replaced(RELEASED, GSI5, index("GSI6", "GSI5PK") + index("GSI7", "GSI4PK", "HasGSI7") + GSI5),
                 "  HasGSI7: !Equals [!Ref LayoutStep, done]\n"),
     MIGRATION | {"steps": [{"kind": "template", "step": "1"}, {"kind": "template", "step": "done"}]},
     True, ["released -> 1: one update", "1 -> done: one update"]),
    ("two new indexes in one template state of a migration",
     with_layout(replaced(RELEASED, GSI5, index("GSI6", "GSI5PK") + index("GSI7", "GSI4PK") + GSI5)),
     MIGRATION | {"steps": [{"kind": "template", "step": "1"}, {"kind": "template", "step": "done"}]},
     False, ["released -> 1: FAILED", "at most one index per update"]),
    ("a new queue, declared by a migration (no layout change)",
     replaced(RELEASED, EVENTS_DLQ, NEW_QUEUE + EVENTS_DLQ), DECLARES_QUEUE, True,
     ["new AWS::SQS::Queue FixtureQueue: declared by migrations/0001-fixture.json", "one update"]),
    ("a new queue no migration declares",
     replaced(RELEASED, EVENTS_DLQ, NEW_QUEUE + EVENTS_DLQ), None, False,
     ["FixtureQueue is declared by no migration"]),
    ("a migration declares a queue the template has not",
     RELEASED, DECLARES_QUEUE, False, ["declares FixtureQueue, which template.yaml has not"]),
    ("a queue made FIFO (replaced: its messages lost)",
     replaced(RELEASED, EVENTS_DLQ, EVENTS_DLQ + "      FifoQueue: true\n"), None, False,
     ["EventsDeadLetterQueue FifoQueue", "replaces the resource"]),
    ("a queue renamed (replaced: its messages lost)",
     replaced(RELEASED, EVENTS_DLQ, EVENTS_DLQ + "      QueueName: renamed\n"), None, False,
     ["EventsDeadLetterQueue QueueName", "replaces the resource"]),
    ("a new layout without a migration",
     with_layout(replaced(RELEASED, GSI5, index("GSI6", "GSI5PK") + index("GSI7", "GSI4PK") + GSI5)),
     None, False, ["no migration in migrations/ takes layout 1 to layout 2"]),
]

# The dev stage ahead of the release (gates.layout_dev): (name, the
# last main's template, this one, passes, words the report must hold).
WITH_GSI6 = replaced(RELEASED, GSI5, index("GSI6", "GSI5PK") + GSI5)
DEV_CASES = [
    ("dev at this template", WITH_GSI6, WITH_GSI6, True, ["the deploy: one update"]),
    ("dev ahead: an index the release never had changed projection: rebuilt, one update each",
     WITH_GSI6, replaced(RELEASED, GSI5, index("GSI6", "GSI5PK", projection="ALL") + GSI5), True,
     ["['GSI6']", "delete GSI6: one update", "create GSI6 as template.yaml defines it: one update",
      "the deploy: one update"]),
    ("dev ahead: a released index changed projection",
     RELEASED, replaced(RELEASED, GSI1_PROJECTION, GSI1_PROJECTION.replace("complete, ", "complete, lapsesAt, ")),
     False, ["FAILED: the last release has GSI1"]),
    ("dev ahead: two of its indexes dropped in one deploy",
     replaced(RELEASED, GSI5, index("GSI6", "GSI5PK") + index("GSI7", "GSI4PK") + GSI5), RELEASED, False,
     ["the deploy: FAILED", "deleted ['GSI6', 'GSI7']"]),
]


def run_dev(dev: str, template: str) -> tuple[bool, str]:
    last_main, current, released = (layout_dev.decode_text(text) for text in (dev, template, RELEASED))
    passes, lines = layout_dev.dev_check(last_main, current, released, "fixture")
    return passes, "\n".join(lines)


def run(template: str, migration: dict | None) -> tuple[bool, str]:
    with TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "contract" / "released").mkdir(parents=True)
        (root / "contract" / "released" / "template.yaml").write_text(RELEASED)
        (root / "template.yaml").write_text(template)
        (root / "migrations").mkdir()
        if migration:
            (root / "migrations" / "0001-fixture.json").write_text(json.dumps(migration))
        passes, lines = layout_check.check(root)
        return passes, "\n".join(lines)


def check(name: str, passes: bool, report: str, expected: bool, words: list[str]) -> None:
    missing = [w for w in words if w not in report]
    assert passes == expected and not missing, (
        f"{name}: {'passes' if passes else 'refused'}"
        + (f" (expected {'to pass' if expected else 'a refusal'})" if passes != expected else "")
        + (f"; the report lacks {missing}" if missing else "") + "\n" + report)


@pytest.mark.parametrize(("name", "template", "migration", "expected", "words"), CASES,
                         ids=[case[0] for case in CASES])
def test_release_fixture(name: str, template: str, migration: dict | None, expected: bool, words: list[str]) -> None:
    check(name, *run(template, migration), expected, words)


@pytest.mark.parametrize(("name", "dev", "template", "expected", "words"), DEV_CASES,
                         ids=[case[0] for case in DEV_CASES])
def test_dev_fixture(name: str, dev: str, template: str, expected: bool, words: list[str]) -> None:
    check(name, *run_dev(dev, template), expected, words)


# What the gate's hand-kept table said replaces each stateful type, until the
# provider schemas took its place: each must still be found replacing.
HAND_KEPT = {
    "AWS::DynamoDB::Table": {"TableName", "KeySchema", "LocalSecondaryIndexes", "ImportSourceSpecification"},
    "AWS::DynamoDB::GlobalTable": {"TableName", "KeySchema", "LocalSecondaryIndexes"},
    "AWS::SQS::Queue": {"QueueName", "FifoQueue"},
    "AWS::S3::Bucket": {"BucketName"},
}


@pytest.mark.parametrize("kind", layout_check.STATEFUL)
def test_what_replaces_each_stateful_type_includes_what_the_gate_kept_by_hand(kind: str) -> None:
    found = {pointer.removeprefix("/properties/") for pointer in layout_check.replacing(kind)}
    assert HAND_KEPT[kind] <= found, f"{kind}: no longer replacing: {sorted(HAND_KEPT[kind] - found)}"


@pytest.mark.parametrize(("kind", "pointer"), [(kind, pointer) for kind, pointers in layout_check.NOT_IN_SCHEMA.items()
                                               for pointer in pointers])
def test_what_the_gate_adds_to_the_schemas_is_not_in_them(kind: str, pointer: str) -> None:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", kind).schema
    stated = {*schema.get("createOnlyProperties", []), *schema.get("conditionalCreateOnlyProperties", [])}
    assert pointer not in stated, f"cfn-lint's schema of {kind} now lists {pointer}: drop it from NOT_IN_SCHEMA"
