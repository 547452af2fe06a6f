"""Rehearses `sam deploy` offline: template.yaml, translated as `sam deploy`
has CloudFormation translate it (aws-sam-translator), created through moto's
CloudFormation in server mode, then the created stack checked: the outputs,
the tables' keys, indexes, TTL and stream, the functions' roles, environment
and reserved concurrency, the stream's event source mapping, the API's routes
and stage, the alarms and the dashboard; and, at the defaults, that
`cargo lambda deploy` into the created pets function changes its code and
nothing else (docs/deploy.md, "Pushing one function's code").

moto's CloudFormation cannot create every resource type the stack has. The
ones it cannot (found with moto's own type table, so the list follows moto and
the template) are created after the stack through the same emulator's service
APIs, from the same translated properties with their intrinsic functions
resolved against the stack, and each is named in the output as a gap. A type
with no such stand-in fails the rehearsal: nothing is skipped silently.

    petstore-deploy-rehearsal [--template template.yaml] [--port 0]
                                [--parameter-overrides K=V ...]

docs/deploy.md, "Rehearsing the deploy offline", lists what moto cannot do.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gates.repo import ROOT

REGION = "us-east-1"
# The stages rehearsed side by side in one account: (stack, parameters, whether
# every other parameter is at its default). prod has a custom domain (in a
# hosted zone the rehearsal creates first) and the shield's reservations on.
DOMAIN = "api.example.com"
ZONE = "example.com"
CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
STAGES = [
    ("petstore-dev", {"Stage": "dev"}, True),
    ("petstore", {
        "Stage": "prod", "DomainName": DOMAIN, "CertificateArn": CERTIFICATE, "HostedZoneId": "<zone>",
        "DisableExecuteApiEndpoint": "true",
        "PetsReservedConcurrency": "50", "StoreReservedConcurrency": "50",
        "DocsReservedConcurrency": "10", "EventsReservedConcurrency": "10", "WebhooksReservedConcurrency": "10",
    }, False),
]
ARTIFACTS = "rehearsal-artifacts"

# Offline: dummy credentials and a region for the translator and boto3, and
# never a developer's profile.
os.environ.update(
    AWS_ACCESS_KEY_ID="rehearsal",
    AWS_SECRET_ACCESS_KEY="rehearsal",
    AWS_DEFAULT_REGION=REGION,
    AWS_REGION=REGION,
    # AWS's managed policies exist in moto's IAM only when asked for; SAM
    # attaches some by ARN, which must exist.
    MOTO_IAM_LOAD_MANAGED_POLICIES="true",
)
for variable in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
    os.environ.pop(variable, None)

import boto3  # noqa: E402
import botocore.exceptions  # noqa: E402
from moto.cloudformation.parsing import get_model_map  # noqa: E402
from moto.iam.aws_managed_policies import aws_managed_policies_data  # noqa: E402
from moto.moto_server.threaded_moto_server import ThreadedMotoServer  # noqa: E402
from samtranslator.translator.transform import transform  # noqa: E402
from samtranslator.yaml_helper import yaml_parse  # noqa: E402

from gates.cfn_intrinsics import NO_VALUE, Intrinsics  # noqa: E402
from gates.rehearsal_queues import check_queues, queue_policy_maker  # noqa: E402
from gates.rehearsal_release import check_apart, check_domain, check_releases, release_makers, version_getters  # noqa: E402

# CloudFormation's own limits on what it is given (the translated template).
MAX_TEMPLATE_URL_BYTES = 1_000_000
MAX_RESOURCES = 500
MAX_PARAMETERS = 200
MAX_OUTPUTS = 200

# The smallest Lambda concurrency quota, and what Lambda keeps unreserved on it.
NEW_ACCOUNT_CONCURRENCY = 10
NEW_ACCOUNT_MIN_UNRESERVED = 10


class Checks:
    """Counts what was checked; a failure is printed and counted, not raised,
    so one run lists every difference."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []
        # What moto fell short in, each with the names it concerns.
        self.gaps: dict[str, list[str]] = {}

    def check(self, ok: bool, what: str) -> bool:
        if ok:
            self.passed += 1
        else:
            self.failed.append(what)
            print(f"  FAIL {what}", flush=True)
        return ok

    def equal(self, got: Any, want: Any, what: str) -> bool:
        return self.check(got == want, f"{what}: got {got!r}, want {want!r}")

    def gap(self, what: str, name: str) -> None:
        self.gaps.setdefault(what, []).append(name)


# --- Translation ------------------------------------------------------------


class AwsManagedPolicies:
    """The translator's managed-policy lookup (a policy named in `Policies`
    by name becomes its ARN), offline: from the copy of AWS's managed
    policies moto ships, instead of IAM's ListPolicies."""

    def load(self) -> dict[str, str]:
        policies = json.loads(aws_managed_policies_data)
        return {name: f"arn:aws:iam::aws:policy{spec['Path']}{name}" for name, spec in policies.items()}


def translate(template: Path, overrides: dict[str, str]) -> tuple[dict, dict]:
    """The SAM template and its translation, each function's code pointed at
    the artifact bucket as `sam package` would. CloudFormation runs the
    transform with the stack's parameter values, and SAM resolves some
    `Ref`s of parameters itself, so it gets them too."""
    sam = yaml_parse(template.read_text())
    for name, resource in sam["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = f"s3://{ARTIFACTS}/{name}.zip"
    translated = transform(copy.deepcopy(sam), dict(overrides), AwsManagedPolicies())
    return sam, translated


# --- Intrinsic functions ----------------------------------------------------


def references(node: Any) -> set[str]:
    """Logical names `node` refers to (Ref, Fn::GetAtt, Fn::Sub)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                found.add(value)
            elif key == "Fn::GetAtt":
                found.add(value[0] if isinstance(value, list) else value.split(".")[0])
            elif key == "Fn::Sub":
                text, variables = (value[0], value[1]) if isinstance(value, list) else (value, {})
                names = re.findall(r"\$\{([^!}][^}]*)\}", text)
                found |= {n.split(".")[0] for n in names if n not in variables}
                found |= references(variables)
            else:
                found |= references(value)
    elif isinstance(node, list):
        for item in node:
            found |= references(item)
    return found


def depends_on(resource: dict) -> set[str]:
    explicit = resource.get("DependsOn", [])
    return references(resource) | set([explicit] if isinstance(explicit, str) else explicit)


class Resolver(Intrinsics):
    """CloudFormation's intrinsic functions over the created stack: what a
    deferred resource's properties are once the stack exists."""

    strict = True

    def __init__(self, template: dict, parameters: dict[str, str], stack_name: str) -> None:
        self.template = template
        self.conditions = template.get("Conditions", {})
        self.mappings = template.get("Mappings", {})
        self.parameters = parameters
        self.physical: dict[str, str] = {}
        self.attributes: dict[tuple[str, str], Callable[..., str]] = {}
        self.pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": "123456789012",
            "AWS::StackName": stack_name,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }

    def ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.parameters:
            kind = self.template.get("Parameters", {}).get(name, {}).get("Type", "")
            if kind == "CommaDelimitedList" or kind.startswith("List<"):
                return [item for item in self.parameters[name].split(",") if item] or [""]
            return self.parameters[name]
        if name in self.physical:
            return self.physical[name]
        raise KeyError(f"Ref {name}: not a parameter, nor a created resource")

    def get_att(self, name: str, attribute: str) -> str:
        getter = self.attributes.get((name, attribute))
        if getter is None:
            raise KeyError(f"Fn::GetAtt {name}.{attribute}: the rehearsal cannot read it")
        return getter()


# --- The emulator -----------------------------------------------------------


class Emulator:
    def __init__(self, port: int) -> None:
        warnings.simplefilter("ignore")
        # One line per request otherwise; failures are the rehearsal's to say.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"

    def client(self, service: str) -> Any:
        # boto3's stubs type each service by its literal name: this takes any.
        return boto3.client(service, endpoint_url=self.endpoint, region_name=REGION)  # type: ignore[call-overload]

    def stop(self) -> None:
        self.server.stop()


def placeholder_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("bootstrap", "#!/bin/sh\n# placeholder: the rehearsal never invokes\n")
    return buffer.getvalue()


def upload_code(emulator: Emulator, sam: dict) -> None:
    """Each function's zip into the artifact bucket: `make build`'s when it
    exists, else a placeholder (the rehearsal creates, it never invokes)."""
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket=ARTIFACTS)
    for name, resource in sam["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        binary = resource.get("Metadata", {}).get("BuildProperties", {}).get("Binary", "")
        built = ROOT / "target" / "lambda" / binary / "bootstrap.zip"
        body = built.read_bytes() if binary and built.is_file() else placeholder_zip()
        s3.put_object(Bucket=ARTIFACTS, Key=f"{name}.zip", Body=body)
        print(f"  code {name}: {built.relative_to(ROOT) if built.is_file() else 'placeholder zip'}")


# --- What moto's CloudFormation can create ----------------------------------


def split(translated: dict, checks: Checks, parameters: dict[str, str] | None = None) -> tuple[dict, dict[str, dict]]:
    """The template moto's CloudFormation is given (for the stack's
    `parameters`), and the resources left for the service APIs: those of a
    type moto's CloudFormation lacks, and those that refer to one."""
    resources = translated["Resources"]
    deferred = {
        name for name, r in resources.items() if r["Type"] not in get_model_map()
    }
    for name in sorted(deferred):
        checks.gap(f"{resources[name]['Type']}: moto's CloudFormation has no such type; created through the service's API", name)
    grew = True
    while grew:
        grew = False
        for name, resource in resources.items():
            if name not in deferred and depends_on(resource) & deferred:
                deferred.add(name)
                grew = True
                needs = sorted(depends_on(resource) & deferred)
                checks.gap(f"{resource['Type']}: refers to a resource of such a type ({', '.join(needs)}); created through the service's API", name)
    stack = copy.deepcopy(translated)
    stack["Resources"] = {n: r for n, r in resources.items() if n not in deferred}
    stack["Outputs"] = {
        n: o for n, o in translated.get("Outputs", {}).items() if not references(o) & deferred
    }
    rewrite_event_bus_refs(stack, checks)
    kms_tags_for_moto(stack, checks)
    stringify_environments(stack, checks)
    resolve_conditional_indexes(stack, translated, parameters or parameters_of(translated, {}), checks)
    return stack, {n: resources[n] for n in resources if n in deferred}


def resolve_conditional_indexes(stack: dict, translated: dict, parameters: dict[str, str], checks: Checks) -> None:
    """A table's index list with `Fn::If [condition, index, AWS::NoValue]`
    items (the stored layout's states, DataLayoutStep): moto keeps a
    NoValue item as null and fails to create the table. moto is given the
    list as CloudFormation resolves it for the stack's parameters."""
    resolver = Resolver(translated, parameters, "rehearsal")
    for name, resource in stack["Resources"].items():
        indexes = resource.get("Properties", {}).get("GlobalSecondaryIndexes")
        if resource["Type"] == "AWS::DynamoDB::Table" and any("Fn::If" in i for i in indexes or []):
            resource["Properties"]["GlobalSecondaryIndexes"] = resolver.resolve(indexes)
            checks.gap("Fn::If items in a table's GlobalSecondaryIndexes: moto keeps AWS::NoValue as null; moto is given the list resolved for the stack's parameters", name)


def kms_tags_for_moto(stack: dict, checks: Checks) -> None:
    """moto's CloudFormation hands an AWS::KMS::Key's `Tags` (`Key`/`Value`,
    as CloudFormation spells them) to its KMS model, which reads
    `TagKey`/`TagValue` (the KMS API's spelling) and fails: moto is given
    them in its spelling."""
    for name, resource in stack["Resources"].items():
        tags = resource.get("Properties", {}).get("Tags")
        if resource["Type"] == "AWS::KMS::Key" and tags:
            resource["Properties"]["Tags"] = [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in tags]
            checks.gap("Tags of an AWS::KMS::Key: moto reads them as TagKey/TagValue; moto is given them so", name)


def rewrite_event_bus_refs(stack: dict, checks: Checks) -> None:
    """moto's `Ref` of an AWS::Events::EventBus gives the Python object, not
    the bus's name (its model has no physical resource id), and an
    environment variable holding it breaks moto's Lambda API. CloudFormation's
    `Ref` of a bus is its name, which `Fn::GetAtt [bus, Name]` also is, and
    moto gets that right: the stack moto is given says it so."""
    buses = {n for n, r in stack["Resources"].items() if r["Type"] == "AWS::Events::EventBus"}
    if not buses:
        return

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Ref"} and node["Ref"] in buses:
                return {"Fn::GetAtt": [node["Ref"], "Name"]}
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    stack["Resources"] = walk(stack["Resources"])
    stack["Outputs"] = walk(stack.get("Outputs", {}))
    for bus in sorted(buses):
        checks.gap("Ref of an AWS::Events::EventBus: moto's is no name (it breaks its Lambda API in an environment variable); moto is given Fn::GetAtt [bus, Name], the same value in CloudFormation", bus)


def stringify_environments(stack: dict, checks: Checks) -> None:
    """moto keeps a Number parameter's value as a number in a function's
    environment, where Lambda has only strings (and the Rust SDK, in
    cargo-lambda, refuses the number). Each value is given to moto as
    `Fn::Join ["", [value]]`, which is the same string in CloudFormation."""
    for name, resource in stack["Resources"].items():
        variables = resource.get("Properties", {}).get("Environment", {}).get("Variables")
        if resource["Type"] != "AWS::Lambda::Function" or not variables:
            continue
        for key, value in variables.items():
            if isinstance(value, dict):
                variables[key] = {"Fn::Join": ["", [value]]}
        checks.gap("a Number parameter in a function's environment: moto keeps a number, Lambda a string; moto is given Fn::Join [\"\", [value]], the same string in CloudFormation", name)


# --- Creating the deferred resources through the service APIs ---------------


def route_keys(body: dict) -> list[tuple[str, dict]]:
    """The routes API Gateway makes of an HTTP API's OpenAPI body, with each
    one's integration: `x-amazon-apigateway-any-method` is ANY, and the path
    `/$default` is the `$default` route."""
    routes = []
    for path, item in body.get("paths", {}).items():
        for method, operation in item.items():
            integration = operation.get("x-amazon-apigateway-integration") if isinstance(operation, dict) else None
            if integration is None:
                continue
            verb = "ANY" if method == "x-amazon-apigateway-any-method" else method.upper()
            key = "$default" if path == "/$default" else f"{verb} {path}"
            routes.append((key, integration))
    return routes


# Stand-ins that other rehearsals add (gates.front_rehearsal): a resource
# type to a function of (emulator, resolver, created) giving its maker.
EXTRA_MAKERS: dict[str, Callable[[Emulator, Resolver, dict], Callable[[str, dict], None]]] = {}


def create_deferred(emulator: Emulator, resolver: Resolver, deferred: dict[str, dict], checks: Checks) -> dict[str, Any]:
    """Each deferred resource, in dependency order, through its service's API."""
    apigw = emulator.client("apigatewayv2")
    cloudwatch = emulator.client("cloudwatch")
    lam = emulator.client("lambda")
    created: dict[str, Any] = {}

    def http_api(name: str, props: dict) -> None:
        body = props["Body"]
        api = apigw.create_api(
            Name=str(body.get("info", {}).get("title", name)),
            ProtocolType="HTTP",
            Description=str(body.get("info", {}).get("description", "")),
            **({"CorsConfiguration": cors(body["x-amazon-apigateway-cors"])} if "x-amazon-apigateway-cors" in body else {}),
            DisableExecuteApiEndpoint=any(
                s.get("x-amazon-apigateway-endpoint-configuration", {}).get("disableExecuteApiEndpoint") is True
                for s in body.get("servers", [])
            ),
        )
        api_id = api["ApiId"]
        for key, integration in route_keys(body):
            made = apigw.create_integration(
                ApiId=api_id,
                IntegrationType=integration["type"].upper(),
                IntegrationMethod=integration.get("httpMethod", "POST"),
                IntegrationUri=integration["uri"],
                PayloadFormatVersion=integration.get("payloadFormatVersion", "2.0"),
            )
            apigw.create_route(ApiId=api_id, RouteKey=key, Target=f"integrations/{made['IntegrationId']}")
        resolver.physical[name] = api_id
        resolver.attributes[(name, "ApiEndpoint")] = lambda: api["ApiEndpoint"]
        created[name] = {"HttpApi": api_id, "Body": body}

    def stage(name: str, props: dict) -> None:
        made = apigw.create_stage(
            ApiId=props["ApiId"],
            StageName=props["StageName"],
            AutoDeploy=bool(props.get("AutoDeploy", False)),
            DefaultRouteSettings={k: (float(v) if k == "ThrottlingRateLimit" else int(v)) for k, v in props.get("DefaultRouteSettings", {}).items()},
            **({"AccessLogSettings": props["AccessLogSettings"]} if "AccessLogSettings" in props else {}),
        )
        resolver.physical[name] = made["StageName"]
        created[name] = props

    def alarm(name: str, props: dict) -> None:
        arguments = {k: v for k, v in props.items() if k in ALARM_FIELDS}
        for number in ("Threshold",):
            if number in arguments:
                arguments[number] = float(arguments[number])
        for number in ("EvaluationPeriods", "DatapointsToAlarm", "Period"):
            if number in arguments:
                arguments[number] = int(arguments[number])
        if "Metrics" in arguments:
            arguments["Metrics"] = [metric_query(m) for m in arguments["Metrics"]]
        cloudwatch.put_metric_alarm(**arguments)
        alarm_name = props["AlarmName"]
        resolver.physical[name] = alarm_name
        arn = cloudwatch.describe_alarms(AlarmNames=[alarm_name])["MetricAlarms"][0]["AlarmArn"]
        resolver.attributes[(name, "Arn")] = lambda: arn
        created[name] = props

    def dashboard(name: str, props: dict) -> None:
        cloudwatch.put_dashboard(DashboardName=props["DashboardName"], DashboardBody=props["DashboardBody"])
        resolver.physical[name] = props["DashboardName"]
        created[name] = props

    def permission(name: str, props: dict) -> None:
        lam.add_permission(
            FunctionName=props["FunctionName"],
            StatementId=name,
            Action=props["Action"],
            Principal=props["Principal"],
            SourceArn=props["SourceArn"],
        )
        resolver.physical[name] = name
        created[name] = props

    def rule(name: str, props: dict) -> None:
        """The hold sweep's schedule (the events function's Schedule event),
        and the bus's rules (webhooks: the events to their fan-out queue)."""
        events = emulator.client("events")
        rule_name = props.get("Name") or f"{resolver.pseudo['AWS::StackName']}-{name}"[:64]
        pattern = props.get("EventPattern")
        arn = events.put_rule(
            Name=rule_name,
            **{k: props[k] for k in ("ScheduleExpression", "Description", "State", "EventBusName") if k in props},
            **({"EventPattern": json.dumps(pattern) if isinstance(pattern, dict) else pattern} if pattern else {}),
        )["RuleArn"]
        targets = [{k: t[k] for k in ("Id", "Arn", "Input", "DeadLetterConfig") if k in t} for t in props.get("Targets", [])]
        if targets:
            events.put_targets(Rule=rule_name, Targets=targets, EventBusName=props.get("EventBusName", "default"))
        resolver.physical[name] = rule_name
        resolver.attributes[(name, "Arn")] = lambda: arn
        created[name] = props

    makers: dict[str, Callable[[str, dict], None]] = {
        **release_makers(emulator, resolver, created, checks, REGION),
        "AWS::Events::Rule": rule,
        "AWS::ApiGatewayV2::Api": http_api,
        "AWS::ApiGatewayV2::Stage": stage,
        "AWS::CloudWatch::Alarm": alarm,
        "AWS::CloudWatch::Dashboard": dashboard,
        "AWS::Lambda::Permission": permission,
        "AWS::SQS::QueuePolicy": queue_policy_maker(emulator, resolver, created),
    }
    for kind, extra in EXTRA_MAKERS.items():
        makers[kind] = extra(emulator, resolver, created)
    pending = dict(deferred)
    while pending:
        ready = [n for n, r in pending.items() if not depends_on(r) & set(pending)]
        if not ready:
            raise SystemExit(f"deploy-rehearsal: a cycle among {sorted(pending)}")
        for name in sorted(ready):
            resource = pending.pop(name)
            # A resource its condition leaves out is not created, so it needs no stand-in.
            if "Condition" in resource and not resolver.condition(resource["Condition"]):
                continue
            maker = makers.get(resource["Type"])
            if not checks.check(maker is not None, f"{name}: no stand-in for {resource['Type']}, which moto's CloudFormation cannot create"):
                continue
            assert maker is not None  # checked just above
            try:
                maker(name, resolver.resolve(resource.get("Properties", {})))
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, KeyError, ValueError) as error:
                checks.check(False, f"{name} ({resource['Type']}) through the service's API: {error}")
    return created


ALARM_FIELDS = {
    "AlarmName", "AlarmDescription", "ActionsEnabled", "OKActions", "AlarmActions",
    "InsufficientDataActions", "MetricName", "Namespace", "Statistic", "ExtendedStatistic",
    "Dimensions", "Period", "Unit", "EvaluationPeriods", "DatapointsToAlarm", "Threshold",
    "ComparisonOperator", "TreatMissingData", "EvaluateLowSampleCountPercentile", "Metrics",
    "ThresholdMetricId",
}


def metric_query(query: dict) -> dict:
    query = copy.deepcopy(query)
    stat = query.get("MetricStat")
    if stat and "Period" in stat:
        stat["Period"] = int(stat["Period"])
    return query


def cors(config: dict) -> dict:
    names = {
        "allowOrigins": "AllowOrigins", "allowMethods": "AllowMethods", "allowHeaders": "AllowHeaders",
        "exposeHeaders": "ExposeHeaders", "maxAge": "MaxAge", "allowCredentials": "AllowCredentials",
    }
    converted = {names.get(k, k): v for k, v in config.items()}
    if "MaxAge" in converted:
        converted["MaxAge"] = int(converted["MaxAge"])
    if "AllowCredentials" in converted:
        converted["AllowCredentials"] = str(converted["AllowCredentials"]).lower() == "true"
    return converted


# --- Checks of the created stack --------------------------------------------


def attribute_getters(emulator: Emulator, resolver: Resolver, stack: dict) -> None:
    """Fn::GetAtt of the stack's resources, read back from the emulator."""
    lam, ddb, logs, sqs, iam, events = (
        emulator.client(s) for s in ("lambda", "dynamodb", "logs", "sqs", "iam", "events")
    )
    for name, resource in stack["Resources"].items():
        physical = resolver.physical.get(name)
        kind = resource["Type"]
        if kind == "AWS::Lambda::Function":
            resolver.attributes[(name, "Arn")] = lambda p=physical: lam.get_function(FunctionName=p)["Configuration"]["FunctionArn"]
        elif kind == "AWS::DynamoDB::Table":
            resolver.attributes[(name, "Arn")] = lambda p=physical: ddb.describe_table(TableName=p)["Table"]["TableArn"]
            resolver.attributes[(name, "StreamArn")] = lambda p=physical: ddb.describe_table(TableName=p)["Table"]["LatestStreamArn"]
        elif kind == "AWS::Logs::LogGroup":
            resolver.attributes[(name, "Arn")] = lambda p=physical: next(
                g["arn"] for g in logs.describe_log_groups(logGroupNamePrefix=p)["logGroups"] if g["logGroupName"] == p
            )
        elif kind == "AWS::SQS::Queue":
            resolver.attributes[(name, "Arn")] = lambda p=physical: sqs.get_queue_attributes(QueueUrl=p, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            resolver.attributes[(name, "QueueName")] = lambda p=physical: p.rsplit("/", 1)[-1]
        elif kind == "AWS::IAM::Role":
            resolver.attributes[(name, "Arn")] = lambda p=physical: iam.get_role(RoleName=p)["Role"]["Arn"]
        elif kind == "AWS::KMS::Key":
            # Built, not read back: moto's DescribeKey fails on this key's
            # policy (its validator errors on a policy it did not write).
            resolver.attributes[(name, "Arn")] = lambda p=physical: p if p.startswith("arn:") else (
                f"arn:aws:kms:{REGION}:{resolver.pseudo['AWS::AccountId']}:key/{p}")
        elif kind == "AWS::Events::Rule":
            # A rule on the stack's bus (webhooks); moto's physical id may be its ARN or its name.
            resolver.attributes[(name, "Arn")] = lambda p=physical, n=name: p if p.startswith("arn:") else events.describe_rule(
                Name=p, EventBusName=resolver.resolve(stack["Resources"][n]["Properties"].get("EventBusName", "default")))["Arn"]
        elif kind == "AWS::Events::EventBus":
            resolver.attributes[(name, "Name")] = lambda n=name: resolver.resolve(stack["Resources"][n]["Properties"]["Name"])
            resolver.attributes[(name, "Arn")] = lambda n=name: events.describe_event_bus(Name=resolver.get_att(n, "Name"))["Arn"]


def check_tables(emulator: Emulator, resolver: Resolver, translated: dict, checks: Checks) -> None:
    ddb = emulator.client("dynamodb")
    for name, resource in translated["Resources"].items():
        if resource["Type"] != "AWS::DynamoDB::Table":
            continue
        want = resolver.resolve(resource["Properties"])
        table = ddb.describe_table(TableName=resolver.physical[name])["Table"]
        checks.equal(sorted_keys(table["KeySchema"]), sorted_keys(want["KeySchema"]), f"{name} key schema")
        checks.equal(
            sorted(map(tuple_of, table["AttributeDefinitions"])),
            sorted(map(tuple_of, want["AttributeDefinitions"])),
            f"{name} attribute definitions",
        )
        checks.equal(table.get("BillingModeSummary", {}).get("BillingMode"), want.get("BillingMode"), f"{name} billing mode")
        got_indexes = {
            i["IndexName"]: (sorted_keys(i["KeySchema"]), i["Projection"]["ProjectionType"], sorted(i["Projection"].get("NonKeyAttributes", [])))
            for i in table.get("GlobalSecondaryIndexes", [])
        }
        want_indexes = {
            i["IndexName"]: (sorted_keys(i["KeySchema"]), i["Projection"]["ProjectionType"], sorted(i["Projection"].get("NonKeyAttributes", [])))
            for i in want.get("GlobalSecondaryIndexes", [])
        }
        checks.equal(got_indexes, want_indexes, f"{name} global secondary indexes (keys, projection)")
        stream = want.get("StreamSpecification")
        got_stream = table.get("StreamSpecification", {})
        checks.equal(
            (got_stream.get("StreamEnabled", False), got_stream.get("StreamViewType")),
            (stream is not None, stream and stream["StreamViewType"]),
            f"{name} stream",
        )
        if stream:
            checks.check(bool(table.get("LatestStreamArn")), f"{name} has a stream ARN")
        ttl = ddb.describe_time_to_live(TableName=table["TableName"])["TimeToLiveDescription"]
        want_ttl = want.get("TimeToLiveSpecification") or {}
        got_ttl = ttl.get("AttributeName") if ttl.get("TimeToLiveStatus") == "ENABLED" else None
        wanted_ttl = want_ttl.get("AttributeName") if want_ttl.get("Enabled") else None
        if got_ttl != wanted_ttl:
            checks.gap(f"TimeToLiveSpecification: moto's CloudFormation does not apply it; not checked here (template: {wanted_ttl or 'off'})", name)
        protected = str(want.get("DeletionProtectionEnabled", False)).lower() == "true"
        if table.get("DeletionProtectionEnabled", False) != protected:
            checks.gap(f"DeletionProtectionEnabled: moto's CloudFormation does not apply it; not checked here (template: {protected})", name)
        else:
            checks.check(True, f"{name} deletion protection {protected}")
        pitr = want.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled", False)
        got_pitr = ddb.describe_continuous_backups(TableName=table["TableName"])["ContinuousBackupsDescription"]
        got_pitr = got_pitr.get("PointInTimeRecoveryDescription", {}).get("PointInTimeRecoveryStatus") == "ENABLED"
        if got_pitr != pitr:
            checks.gap(f"PointInTimeRecoverySpecification: moto's CloudFormation does not apply it; not checked here (template: {'on' if pitr else 'off'})", name)


def sorted_keys(schema: list[dict]) -> list[tuple[str, str]]:
    return [(k["AttributeName"], k["KeyType"]) for k in sorted(schema, key=lambda k: k["KeyType"])]


def tuple_of(definition: dict) -> tuple[str, str]:
    return (definition["AttributeName"], definition["AttributeType"])


def check_functions(emulator: Emulator, resolver: Resolver, translated: dict, checks: Checks) -> int:
    """Each function as the stack made it; the sum of their reservations."""
    lam, iam = emulator.client("lambda"), emulator.client("iam")
    reserved_sum = 0
    for name, resource in translated["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        want = resolver.resolve(resource["Properties"])
        got = lam.get_function(FunctionName=resolver.physical[name])
        config = got["Configuration"]
        checks.equal(config.get("Role"), want["Role"], f"{name} role")
        # Lambda's variables are strings; moto keeps a Number parameter's value as a number.
        checks.equal(
            {k: str(v) for k, v in config.get("Environment", {}).get("Variables", {}).items()},
            {k: str(v) for k, v in want.get("Environment", {}).get("Variables", {}).items()},
            f"{name} environment",
        )
        for field in ("Runtime", "Handler", "MemorySize", "Timeout"):
            if field in want:
                checks.equal(str(config.get(field)), str(want[field]), f"{name} {field}")
        reserved = got.get("Concurrency", {}).get("ReservedConcurrentExecutions")
        want_reserved = want.get("ReservedConcurrentExecutions")
        checks.equal(None if reserved is None else int(reserved), None if want_reserved is None else int(want_reserved), f"{name} reserved concurrency")
        reserved_sum += int(reserved or 0)
        for field in ("Architectures", "LoggingConfig", "TracingConfig"):
            if field in want and config.get(field) != want[field]:
                checks.gap(f"{field}: moto's CloudFormation does not pass it to Lambda; not checked here", name)
        # The role: the inline policies the template gives it, and SAM's managed ones.
        role_name = config["Role"].rsplit("/", 1)[-1]
        role_resource = next(n for n, r in translated["Resources"].items() if r["Type"] == "AWS::IAM::Role" and resolver.physical.get(n) == role_name)
        want_role = resolver.resolve(translated["Resources"][role_resource]["Properties"])
        got_policies = {p: iam.get_role_policy(RoleName=role_name, PolicyName=p)["PolicyDocument"] for p in iam.list_role_policies(RoleName=role_name)["PolicyNames"]}
        want_policies = {p["PolicyName"]: p["PolicyDocument"] for p in want_role.get("Policies", [])}
        checks.equal(normalise(got_policies), normalise(want_policies), f"{name} role's inline policies")
        checks.equal(
            json.loads(json.dumps(iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"])),
            want_role["AssumeRolePolicyDocument"],
            f"{name} role's trust policy",
        )
        got_managed = sorted(p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"])
        want_managed = sorted(want_role.get("ManagedPolicyArns", []))
        if got_managed != want_managed:
            checks.gap("ManagedPolicyArns of an AWS::IAM::Role: moto's CloudFormation attaches none; each ARN checked to exist among AWS's managed policies instead", f"{name}'s role")
        for arn in want_managed:
            try:
                iam.get_policy(PolicyArn=arn)
                checks.check(True, arn)
            except iam.exceptions.NoSuchEntityException:
                checks.check(False, f"{name} role: the managed policy {arn} does not exist")
    return reserved_sum


def same(got: Any, want: Any) -> bool:
    """Equal as CloudFormation means it: a parameter's value is text, the
    emulator's may be a number."""
    if isinstance(want, (dict, list)):
        return json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    return str(got) == str(want)


def normalise(policies: dict) -> str:
    """Policies to compare: moto returns the documents CloudFormation gave a
    role as Python's text of them, the API's as JSON."""

    def document(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return ast.literal_eval(value)
        return value

    def unversioned(value: Any) -> Any:
        # A stand-in role's documents carry the Version moto's API insists on.
        return {k: v for k, v in value.items() if k != "Version"} if isinstance(value, dict) else value

    return json.dumps({k: unversioned(document(v)) for k, v in policies.items()}, sort_keys=True)


def check_stream_mapping(emulator: Emulator, resolver: Resolver, translated: dict, checks: Checks) -> None:
    lam = emulator.client("lambda")
    mappings = lam.list_event_source_mappings()["EventSourceMappings"]
    for name, resource in translated["Resources"].items():
        if resource["Type"] != "AWS::Lambda::EventSourceMapping":
            continue
        want = resolver.resolve(resource["Properties"])
        function_arn = lam.get_function(FunctionName=want["FunctionName"])["Configuration"]["FunctionArn"]
        found = [m for m in mappings if m.get("UUID") == resolver.physical[name]]
        if not checks.check(len(found) == 1, f"{name}: the event source mapping exists"):
            continue
        got = found[0]
        checks.equal(got.get("EventSourceArn"), want["EventSourceArn"], f"{name} source (the table's stream or a queue)")
        if got.get("FunctionArn") != function_arn and want["FunctionName"].endswith(":live"):
            # moto resolves the alias to its version when the mapping is made
            # and keeps that version after the alias moves (AWS keeps the alias).
            checks.equal(got.get("FunctionArn", "").rsplit(":", 1)[0], function_arn.rsplit(":", 1)[0], f"{name} function")
            checks.gap("an event source mapping on an alias: moto keeps the version the alias had when the mapping was made; the function checked, not its version", name)
        else:
            checks.equal(got.get("FunctionArn"), function_arn, f"{name} function")
        checks.equal(got.get("BatchSize"), int(want["BatchSize"]), f"{name} batch size")
        for field in ("StartingPosition", "FilterCriteria", "DestinationConfig", "FunctionResponseTypes", "MaximumRetryAttempts", "BisectBatchOnFunctionError", "ParallelizationFactor", "MaximumRecordAgeInSeconds", "MaximumBatchingWindowInSeconds", "ScalingConfig"):
            if field not in want:
                continue
            if same(got.get(field), want[field]):
                checks.check(True, f"{name} {field}")
            else:
                checks.gap(f"{field} of an event source mapping: moto does not keep it; not checked here (template: {json.dumps(want[field])})", name)


def check_api(emulator: Emulator, resolver: Resolver, sam: dict, created: dict, checks: Checks) -> None:
    """The API's routes: one per HttpApi event of the SAM template, each to
    the integration of its own function; every operation of openapi.yaml
    among them; and the stage's throttle."""
    apigw, lam = emulator.client("apigatewayv2"), emulator.client("lambda")
    apis = [(n, c) for n, c in created.items() if "HttpApi" in c]
    if not checks.check(len(apis) == 1, f"one HTTP API created ({[n for n, _ in apis]})"):
        return
    api_name, api = apis[0]
    api_id = api["HttpApi"]
    routes = apigw.get_routes(ApiId=api_id)["Items"]
    integrations = {i["IntegrationId"]: i for i in apigw.get_integrations(ApiId=api_id)["Items"]}
    got = {}
    for route in routes:
        integration = integrations[route["Target"].split("/", 1)[1]]
        got[route["RouteKey"]] = integration["IntegrationUri"]
    want = {}
    for name, resource in sam["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] != "HttpApi":
                continue
            # Through the alias `live` (AutoPublishAlias), never the function's $LATEST.
            arn = lam.get_alias(FunctionName=resolver.physical[name], Name="live")["AliasArn"]
            props = event.get("Properties", {})
            key = f"{props['Method'].upper()} {props['Path']}" if "Path" in props else "$default"
            want[key] = arn
    checks.equal(sorted(got), sorted(want), f"{api_name} route keys")
    for key, arn in want.items():
        if key in got:
            checks.check(f"/functions/{arn}/invocations" in got[key], f"{key} integrates the alias {arn}: {got[key]}")
    openapi = yaml_parse((ROOT / "openapi.yaml").read_text())
    for path, item in openapi["paths"].items():
        for method in item:
            if method in ("get", "post", "put", "patch", "delete"):
                checks.check(f"{method.upper()} {path}" in got, f"openapi.yaml's {method.upper()} {path} is a route")
    stages = apigw.get_stages(ApiId=api_id)["Items"]
    stage = next((s for s in stages if s["StageName"] == "$default"), None)
    if checks.check(stage is not None, f"{api_name} has the $default stage") and stage is not None:
        settings = stage.get("DefaultRouteSettings", {})
        checks.equal(
            (settings.get("ThrottlingRateLimit"), settings.get("ThrottlingBurstLimit")),
            tuple(
                cast(resolver.resolve(sam["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"][setting]))
                for cast, setting in ((float, "ThrottlingRateLimit"), (int, "ThrottlingBurstLimit"))
            ),
            "the stage's throttle (rate, burst)",
        )
    policies = {}
    for name, resource in sam["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            try:
                policy = json.loads(lam.get_policy(FunctionName=resolver.physical[name], Qualifier="live")["Policy"])
                policies[name] = policy["Statement"]
            except lam.exceptions.ResourceNotFoundException:
                policies[name] = []
    for name, statements in policies.items():
        routed = any(f"/functions/{lam.get_function(FunctionName=resolver.physical[name])['Configuration']['FunctionArn']}:live/" in uri for uri in got.values())
        if routed:
            checks.check(
                any(api_id in json.dumps(s.get("Condition", {})) for s in statements),
                f"{name}'s alias live may be invoked by the API (a permission naming {api_id})",
            )


def check_alarms_and_dashboard(emulator: Emulator, resolver: Resolver, created: dict, translated: dict, checks: Checks) -> None:
    cloudwatch = emulator.client("cloudwatch")
    alarms = {a["AlarmName"]: a for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    arns = {a["AlarmArn"] for a in alarms.values()}
    expected = [n for n, r in translated["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    for name in expected:
        checks.check(resolver.physical.get(name) in alarms, f"alarm {name} created")
    for name, resource in translated["Resources"].items():
        if resource["Type"] != "AWS::CloudWatch::Dashboard":
            continue
        if not checks.check(name in resolver.physical, f"dashboard {name} created"):
            continue
        body = cloudwatch.get_dashboard(DashboardName=resolver.physical[name])["DashboardBody"]
        try:
            parsed = json.loads(body)
        except ValueError as error:
            checks.check(False, f"{name}'s body is JSON: {error}")
            continue
        named = [a for w in parsed.get("widgets", []) if w.get("type") == "alarm" for a in w["properties"].get("alarms", [])]
        for arn in named:
            checks.check(arn in arns, f"{name} shows the alarm {arn}, which exists")


def check_outputs(cf: Any, resolver: Resolver, translated: dict, stack: dict, checks: Checks) -> dict[str, str]:
    described = cf.describe_stacks(StackName=resolver.pseudo["AWS::StackName"])["Stacks"][0]
    got = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    outputs = {}
    for name, output in translated.get("Outputs", {}).items():
        if "Condition" in output and not resolver.condition(output["Condition"]):
            continue
        try:
            want = resolver.resolve(output["Value"])
        except KeyError as error:
            checks.check(False, f"output {name}: {error}")
            continue
        if name in stack.get("Outputs", {}):
            checks.equal(got.get(name), want, f"output {name}")
        else:
            checks.gap("Outputs that refer to a resource created through a service's API: resolved by the rehearsal, not by moto's CloudFormation", name)
        checks.check(bool(want), f"output {name} has a value")
        outputs[name] = want
    return outputs


def check_cargo_lambda_deploy(emulator: Emulator, outputs: dict[str, str], checks: Checks) -> None:
    """docs/deploy.md's fast loop, on the created stack: `cargo lambda deploy`
    of new code into the pets function, named by the stack's output, under
    its existing role. It must change the code and nothing of the function's
    configuration; and `--env-var` alone replaces the whole environment,
    which the docs warn of."""
    cargo_lambda = Path(sys.executable).parent / "cargo-lambda"
    if not checks.check(cargo_lambda.is_file(), f"{cargo_lambda} is installed (requirements-dev.txt)"):
        return
    lam = emulator.client("lambda")
    function = outputs["PetsFunctionName"]
    role = lam.get_function_configuration(FunctionName=function)["Role"]
    built = ROOT / "target" / "lambda" / "pets" / "bootstrap"
    # Any executable stands in for new code: updating code sends no architecture.
    binary = built if built.is_file() else Path(shutil.which("true") or "/bin/true")
    with tempfile.TemporaryDirectory() as scratch:
        bootstrap = Path(scratch) / "bootstrap"
        shutil.copy(binary, bootstrap)

        def deploy(*flags: str) -> bool:
            done = subprocess.run(
                [str(cargo_lambda), "lambda", "deploy", "--binary-path", str(bootstrap),
                 "--iam-role", role, "--endpoint-url", emulator.endpoint, "--region", REGION,
                 *flags, function],
                cwd=ROOT, capture_output=True, text=True, timeout=120,
                env={**os.environ, "PATH": f"{cargo_lambda.parent}:{os.environ.get('PATH', '')}"},
            )
            return checks.check(done.returncode == 0, f"cargo lambda deploy {' '.join(flags)}: {done.stderr[-500:]}")

        kept = ("Role", "Environment", "MemorySize", "Timeout", "Runtime", "Handler", "TracingConfig", "Architectures", "LoggingConfig")
        before = lam.get_function(FunctionName=function)
        live = lam.get_alias(FunctionName=function, Name="live")["FunctionVersion"]
        if not deploy():
            return
        checks.equal(lam.get_alias(FunctionName=function, Name="live")["FunctionVersion"], live,
                     "cargo lambda deploy without --alias leaves the alias the API invokes where it was")
        after = lam.get_function(FunctionName=function)
        checks.check(before["Configuration"]["CodeSha256"] != after["Configuration"]["CodeSha256"], "cargo lambda deploy: the code is new")
        for field in kept:
            checks.equal(after["Configuration"].get(field), before["Configuration"].get(field), f"cargo lambda deploy leaves {field}")
        checks.equal(after.get("Concurrency"), before.get("Concurrency"), "cargo lambda deploy leaves the reserved concurrency")
        versions = [v["Version"] for v in lam.list_versions_by_function(FunctionName=function)["Versions"]]
        checks.check(len(versions) >= 2, f"cargo lambda deploy published a version: {versions}")

        if not deploy("--alias", "live"):
            return
        newest = max(int(v["Version"]) for v in lam.list_versions_by_function(FunctionName=function)["Versions"] if v["Version"].isdigit())
        checks.equal(lam.get_alias(FunctionName=function, Name="live")["FunctionVersion"], str(newest),
                     "cargo lambda deploy --alias live points the alias the API invokes at the version it published")

        if not deploy("--env-var", "REHEARSAL=1"):
            return
        variables = lam.get_function_configuration(FunctionName=function).get("Environment", {}).get("Variables", {})
        checks.equal(sorted(variables), ["REHEARSAL"], "cargo lambda deploy --env-var replaces the whole environment (docs/deploy.md warns)")


# --- The run ----------------------------------------------------------------


def parameters_of(translated: dict, overrides: dict[str, str]) -> dict[str, str]:
    values = {}
    for name, spec in translated.get("Parameters", {}).items():
        if name in overrides:
            values[name] = overrides[name]
        elif "Default" in spec:
            values[name] = str(spec["Default"])
    unknown = set(overrides) - set(values)
    if unknown:
        raise SystemExit(f"deploy-rehearsal: no such parameters: {sorted(unknown)}")
    return values


def rehearse(emulator: Emulator, template: Path, overrides: dict[str, str], checks: Checks,
             stack_name: str = "petstore", at_defaults: bool = True) -> Resolver | None:
    """Creates and checks one stack; its resolver, when it was created."""
    sam, translated = translate(template, overrides)
    body = json.dumps(translated)
    checks.check(len(body.encode()) <= MAX_TEMPLATE_URL_BYTES, f"translated template {len(body)} bytes, at most {MAX_TEMPLATE_URL_BYTES} through S3")
    checks.check(len(translated["Resources"]) <= MAX_RESOURCES, f"{len(translated['Resources'])} resources, at most {MAX_RESOURCES}")
    checks.check(len(translated.get("Parameters", {})) <= MAX_PARAMETERS, f"{len(translated.get('Parameters', {}))} parameters, at most {MAX_PARAMETERS}")
    checks.check(len(translated.get("Outputs", {})) <= MAX_OUTPUTS, f"{len(translated.get('Outputs', {}))} outputs, at most {MAX_OUTPUTS}")

    upload_code(emulator, sam)
    stack, deferred = split(translated, checks, parameters_of(translated, overrides))
    s3 = emulator.client("s3")
    s3.put_object(Bucket=ARTIFACTS, Key=f"{stack_name}.json", Body=json.dumps(stack).encode())
    parameters = parameters_of(translated, overrides)
    cf = emulator.client("cloudformation")
    # moto prints a line per resource type it lacks; split() says it once.
    with contextlib.redirect_stdout(io.StringIO()):
        cf.create_stack(
            StackName=stack_name,
            TemplateURL=f"https://s3.amazonaws.com/{ARTIFACTS}/{stack_name}.json",
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in overrides.items()],
            Capabilities=["CAPABILITY_IAM"],
        )
    described = cf.describe_stacks(StackName=stack_name)["Stacks"][0]
    if not checks.equal(described["StackStatus"], "CREATE_COMPLETE", f"stack status ({described.get('StackStatusReason')})"):
        for event in cf.describe_stack_events(StackName=stack_name)["StackEvents"]:
            if "FAILED" in event["ResourceStatus"]:
                print(f"  {event['LogicalResourceId']}: {event.get('ResourceStatusReason')}")
        return None
    created_by_cfn = cf.list_stack_resources(StackName=stack_name)["StackResourceSummaries"]
    print(f"  moto's CloudFormation created {len(created_by_cfn)} of {len(translated['Resources'])} resources; "
          f"{len(deferred)} through the service APIs")

    resolver = Resolver(translated, parameters, stack_name)
    for summary in created_by_cfn:
        resolver.physical[summary["LogicalResourceId"]] = summary.get("PhysicalResourceId", "")
    attribute_getters(emulator, resolver, stack)
    version_getters(emulator, resolver, stack)
    for name, resource in stack["Resources"].items():
        if resource["Type"] == "AWS::Events::EventBus":
            # Ref of a bus is its name (moto's own Ref of it is what split() works around).
            resolver.physical[name] = resolver.get_att(name, "Name")
    created = create_deferred(emulator, resolver, deferred, checks)

    outputs = check_outputs(cf, resolver, translated, stack, checks)
    check_tables(emulator, resolver, translated, checks)
    reserved = check_functions(emulator, resolver, translated, checks)
    check_stream_mapping(emulator, resolver, translated, checks)
    check_queues(emulator, resolver, translated, checks)
    check_api(emulator, resolver, sam, created, checks)
    check_alarms_and_dashboard(emulator, resolver, created, translated, checks)
    check_releases(emulator, resolver, translated, checks)
    check_domain(emulator, resolver, translated, checks)
    if at_defaults:
        check_cargo_lambda_deploy(emulator, outputs, checks)
        checks.check(
            NEW_ACCOUNT_CONCURRENCY - reserved >= NEW_ACCOUNT_MIN_UNRESERVED,
            f"at the defaults the functions reserve {reserved}: a quota of {NEW_ACCOUNT_CONCURRENCY} keeps {NEW_ACCOUNT_MIN_UNRESERVED} unreserved",
        )
    print(f"  reserved concurrency, all functions: {reserved}"
          + (f" (an account needs {reserved + 100} unreserved for them)" if reserved else ""))
    return resolver


def rehearse_stages(emulator: Emulator, template: Path, checks: Checks) -> None:
    """STAGES, side by side in one account and region, then checked apart."""
    zone = emulator.client("route53").create_hosted_zone(Name=ZONE, CallerReference="rehearsal")["HostedZone"]["Id"]
    made = {}
    for stack_name, parameters, at_defaults in STAGES:
        parameters = {k: zone.rsplit("/", 1)[-1] if v == "<zone>" else v for k, v in parameters.items()}
        print(f"deploy-rehearsal: stack {stack_name} from {template.name} through moto's CloudFormation on "
              f"{emulator.endpoint}, with {' '.join(f'{k}={v}' for k, v in parameters.items())}"
              + (" (every other parameter at its default)" if at_defaults else ""))
        resolver = rehearse(emulator, template, parameters, checks, stack_name, at_defaults)
        if resolver is not None:
            made[stack_name] = (resolver, parameters)
    if checks.check(len(made) == len(STAGES), f"every stage created: {sorted(made)}"):
        check_apart(emulator, made, checks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    parser.add_argument("--port", type=int, default=int(os.environ.get("MOTO_PORT", "0")), help="moto's port (0: a free one)")
    parser.add_argument("--parameter-overrides", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    overrides = dict(pair.split("=", 1) for pair in args.parameter_overrides)

    checks = Checks()
    emulator = Emulator(args.port)
    try:
        if overrides:
            print(f"deploy-rehearsal: {args.template.name} through moto's CloudFormation on {emulator.endpoint}, "
                  f"with {' '.join(args.parameter_overrides)}")
            rehearse(emulator, args.template, overrides, checks)
        else:
            rehearse_stages(emulator, args.template, checks)
    except Exception as error:  # noqa: BLE001 - one failure, with what was checked so far
        traceback.print_exc()
        checks.check(False, f"the rehearsal stopped: {type(error).__name__}: {error}")
    finally:
        emulator.stop()
    print("deploy-rehearsal: where moto falls short:")
    for what, names in checks.gaps.items():
        print(f"  - {what}: {', '.join(dict.fromkeys(names))}")
    print(f"deploy-rehearsal: {checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
