"""The IAM check's own test (`make iam-check` runs it after the check):
template.yaml with one line of a function's policy removed must fail the check
on the last recording, naming that function, the call and what is missing.
A check that passed these would not stand between a policy edit and 500s in
production.

Each mutation removes or changes one line of one function's policy, as an
edit would: an action, an index, the API-key denial's condition pattern,
pets' and the store's writes widened beyond their partitions, the key
list's denial, the
events function's stream (widened to every stream, or SAM's role back), the
pre-traffic check's key put (gone, widened to a delete, to a role, to any
item, to returning the old item), the webhooks function's deferral, its
items' condition, its queues.

It needs a recording of the tests' AWS calls, so plain `pytest` leaves it
out (marker `recording`); scripts/iam-check.sh runs it on the recording it
checked:

    PETSTORE_AWS_CALLS=.local/aws-calls pytest tools/gates -m recording
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gates.repo import ROOT

pytestmark = pytest.mark.recording
TEMPLATE = ROOT / "template.yaml"

# What the check prints when the events function may read another stream.
OTHER_STREAM_READ = ("EventsFunction: dynamodb:GetRecords on arn:aws:dynamodb:us-east-1:"
                     "123456789012:table/another-table/stream/")

# (resource, the line removed from its block, what the check must then
# print, why); or (resource, line, expected, why, the line put instead).
# The data table's ARN as the template writes it: the adopted table's
# (DataTableName, after a restore) or the stack's own (docs/restore.md).
ADOPTABLE = (
    '!If [AdoptsDataTable, !Sub "arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:'
    '${{AWS::AccountId}}:table/${{DataTableName}}{arn}, {own}]'
)

# The attributes of the pre-traffic check's key, as the check prints them.
HOOK_KEY = "['PK', 'SK', 'id', 'plan', 'name', 'createdAt', 'revoked', 'expiresAt']"

MUTATIONS = [
    (
        "PetsFunction",
        "                - dynamodb:BatchGetItem\n",
        "PetsFunction: dynamodb:BatchGetItem on DataTable ",
        "one action gone: a list's pets are read in batches",
    ),
    (
        "StoreFunction",
        "                - dynamodb:UpdateItem\n              Resource: !GetAtt RateLimitTable.Arn\n",
        "StoreFunction: dynamodb:UpdateItem on RateLimitTable ",
        "the rate-limit counters' one action swapped for another (GetItem)",
    ),
    (
        "StoreFunction",
        '                - '
        + ADOPTABLE.format(arn='/index/GSI4*"', own='!Sub "${DataTable.Arn}/index/GSI4*"')
        + "\n",
        "StoreFunction: dynamodb:Query on DataTable/index/GSI4v2 ",
        "one index gone: a customer's own orders",
    ),
    (
        "StoreFunction",
        "              Action: dynamodb:Scan\n",
        "StoreFunction: dynamodb:Scan on DataTable/index/GSI5 ",
        "the inventory index's scan swapped for a query: the inventory lists",
    ),
    (
        "PetsFunction",
        '                - '
        + ADOPTABLE.format(arn='/index/GSI1*"', own='!Sub "${DataTable.Arn}/index/GSI1*"')
        + "\n",
        "PetsFunction: dynamodb:Query on DataTable/index/GSI1v2 ",
        "one index gone: the list of all pets",
    ),
    (
        "PetsFunction",
        '                  dynamodb:LeadingKeys: ["PET#*", "CATEGORY#*", "CATEGORYNAME#*", "IDEMPOTENCY#*"]\n',
        "PetsFunction: dynamodb:PutItem on DataTable (",
        "pets' writes widened to every partition (a webhook endpoint, an owner's count)",
        '                  dynamodb:LeadingKeys: ["*"]\n',
    ),
    (
        "StoreFunction",
        '                  dynamodb:LeadingKeys: ["ORDER#*", "PET#*", "HOLDS#*", "IDEMPOTENCY#*"]\n',
        "StoreFunction: dynamodb:PutItem on DataTable (",
        "the store's writes widened to every partition (a webhook endpoint, a category)",
        '                  dynamodb:LeadingKeys: ["*"]\n',
    ),
    (
        "PetsFunction",
        "            - Sid: NoKeyIndex\n              Effect: Deny\n",
        "PetsFunction: dynamodb:Query on DataTable/index/GSI1",
        "the key list's denial gone: pets may list every key's index entry",
        "            - Sid: NoKeyIndex\n              Effect: Allow\n",
    ),
    (
        "EventsRole",
        "                Resource: !If [AdoptsDataTable, !Ref DataTableStreamArn, !GetAtt DataTable.StreamArn]\n",
        OTHER_STREAM_READ,
        "the events function's stream reads widened to every stream",
        '                Resource: "*"\n',
    ),
    (
        "EventsFunction",
        "      Role: !GetAtt EventsRole.Arn\n",
        OTHER_STREAM_READ,
        "the events function back on SAM's role (AWSLambdaDynamoDBExecutionRole)",
        "",
    ),
    # The events function's webhooks fan-out (template.yaml, EventsRole).
    (
        "EventsRole",
        '                    dynamodb:LeadingKeys: ["WEBHOOK#*"]\n',
        "EventsFunction: dynamodb:BatchGetItem on DataTable",
        "the events function's fan-out reads widened to every item (a category)",
        '                    dynamodb:LeadingKeys: ["*"]\n',
    ),
    (
        "EventsRole",
        "                Action: sqs:SendMessage\n                Resource: !GetAtt WebhookDeliveriesQueue.Arn\n",
        "EventsFunction: sqs:SendMessage on arn:aws:sqs:us-east-1:123456789012:another-queue",
        "the events function's delivery messages widened to every queue",
        '                Action: sqs:SendMessage\n                Resource: "*"\n',
    ),
    # The pre-traffic check's own key (functions/pretraffic/src/key.rs).
    (
        "PreTrafficFunction",
        "              Action: dynamodb:PutItem\n",
        f"with dynamodb:Attributes {HOOK_KEY}, made by the pre-traffic check's promise, would be",
        "the hook's key put swapped for another action: the keyed check makes no key",
        "              Action: dynamodb:ConditionCheckItem\n",
    ),
    (
        "PreTrafficFunction",
        "              Action: dynamodb:PutItem\n",
        "PreTrafficFunction: dynamodb:DeleteItem on DataTable (",
        "the hook may delete a key: its key needs none (it expires)",
        "              Action: [dynamodb:PutItem, dynamodb:DeleteItem]\n",
    ),
    (
        "PreTrafficFunction",
        "revoked, expiresAt]\n",
        f"with dynamodb:Attributes {HOOK_KEY[:-1]}, 'role'] is allowed",
        "the hook's attributes widened to a role: it could mint a staff key",
        "revoked, expiresAt, role]\n",
    ),
    (
        "PreTrafficFunction",
        '                ForAllValues:StringLike:\n                  dynamodb:LeadingKeys: ["APIKEY#*"]\n',
        "with dynamodb:LeadingKeys [PET#1]",
        "the hook's put no longer confined to key items",
        "",
    ),
    (
        "PreTrafficFunction",
        "                StringEqualsIfExists:\n                  dynamodb:ReturnValues: NONE\n",
        "with dynamodb:ReturnValues ALL_OLD is allowed",
        "the hook's put may return the item it replaces",
        "",
    ),
    (
        "WebhooksRole",
        "                  - sqs:ChangeMessageVisibility\n",
        "WebhooksFunction: sqs:ChangeMessageVisibility on WebhookDeliveriesQueue ",
        "one action gone: an attempt's deferral to its next attempt",
    ),
    (
        "WebhooksRole",
        '                    dynamodb:LeadingKeys: ["WEBHOOK#*", "WEBHOOKOWNER#*", "IDEMPOTENCY#*"]\n',
        "WebhooksFunction: dynamodb:PutItem on DataTable ",
        "one item kind gone: the wrapper's idempotency records",
        '                    dynamodb:LeadingKeys: ["WEBHOOK#*", "WEBHOOKOWNER#*"]\n',
    ),
    (
        "WebhooksRole",
        '                    dynamodb:LeadingKeys: ["WEBHOOK#*", "WEBHOOKOWNER#*", "IDEMPOTENCY#*"]\n',
        "WebhooksFunction: dynamodb:UpdateItem on DataTable (",
        "the webhook items' condition widened to every item (an order, a key)",
        '                    dynamodb:LeadingKeys: ["*"]\n',
    ),
    (
        "WebhooksRole",
        "                  - !GetAtt WebhookEventsQueue.Arn\n                  - !GetAtt WebhookDeliveriesQueue.Arn\n",
        "WebhooksFunction: sqs:ReceiveMessage on arn:aws:sqs:us-east-1:123456789012:another-queue",
        "the pollers' reads widened to every queue (SAM's AWSLambdaSQSQueueExecutionRole)",
        '                  - "*"\n',
    ),
    (
        "WebhooksRole",
        '                    dynamodb:LeadingKeys: ["WEBHOOK#*#*"]\n',
        "WebhooksFunction: dynamodb:Query on ",
        "one list gone: an endpoint's deliveries (its delivery partitions, on the table)",
        '                    dynamodb:LeadingKeys: ["WEBHOOKOWNER#*#*"]\n',
    ),
]


def resource_block(text, logical):
    """The span of `logical`'s resource in the template's text."""
    start = text.index(f"\n  {logical}:\n")
    following = re.compile(r"\n  [A-Za-z0-9]+:\n").search(text, start + 1)
    return start, following.start() if following else len(text)


def mutate(text, logical, line, instead=None):
    start, end = resource_block(text, logical)
    block = text[start:end]
    if line not in block:
        pytest.fail(f"iam-check-mutations: {logical} has no {line!r} to remove; update MUTATIONS")
    if instead is not None:
        replacement = instead
    elif line.endswith("Condition:"):
        # Keep the statement valid: one action stays, the ones that matter go.
        replacement = "                - dynamodb:BatchWriteItem\n              Resource: !GetAtt DataTable.Arn\n              Condition:"
    elif "dynamodb:Scan" in line:
        replacement = "              Action: dynamodb:Query\n"
    elif "RateLimitTable" in line:
        replacement = "                - dynamodb:GetItem\n              Resource: !GetAtt RateLimitTable.Arn\n"
    else:
        replacement = ""
    return text[:start] + block.replace(line, replacement, 1) + text[end:]


def test_mutations_are_distinct() -> None:
    assert len({why for _, _, _, why, *_ in MUTATIONS}) == len(MUTATIONS)


@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[int, str]]:
    """Each mutation's (exit status, output) from the IAM check on the
    recording in $PETSTORE_AWS_CALLS, by why."""
    recording = os.environ.get("PETSTORE_AWS_CALLS")
    if not recording or not list(Path(recording).glob("*.jsonl")):
        pytest.fail(f"no recording of AWS calls in PETSTORE_AWS_CALLS ({recording!r}): run `make iam-check`")
    original = TEMPLATE.read_text()
    (ROOT / ".local").mkdir(exist_ok=True)
    runs = []
    for logical, line, _, why, *instead in MUTATIONS:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=ROOT / ".local", delete=False) as f:
            f.write(mutate(original, logical, line, *instead))
        # All at once: each run is mostly waiting on its simulator.
        run = subprocess.Popen(
            [sys.executable, "-m", "gates.iam_check", "--quiet", "--template", f.name, recording],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        runs.append((why, Path(f.name), run))
    found = {}
    for why, path, run in runs:
        stdout, stderr = run.communicate()
        path.unlink()
        found[why] = (run.returncode, stdout + stderr)
    return found


@pytest.mark.parametrize(("logical", "expected", "why"), [(logical, expected, why)
                                                          for logical, _, expected, why, *_ in MUTATIONS],
                         ids=[why for _, _, _, why, *_ in MUTATIONS])
def test_mutation_fails_the_check(answers: dict[str, tuple[int, str]], logical: str, expected: str,
                                  why: str) -> None:
    status, output = answers[why]
    assert status == 1 and expected in output, \
        f"{why}: {logical}'s edit: the check answered {status} without {expected!r}:\n{output}"
