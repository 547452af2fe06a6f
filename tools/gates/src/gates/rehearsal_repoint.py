"""Pointing the rehearsal's stack at a restored table (docs/restore.md,
"Pointing the stack at it"), for gates.restore_rehearsal: the stack is
updated through moto's CloudFormation with DataTableName and
DataTableStreamArn set, as `sam deploy --parameter-overrides` would; what
moto's update does not apply is applied through the same emulator's service
APIs and named as a gap; then the stack is checked against the template at
the new parameters (with gates.deploy_rehearsal's checks), and each part
checked to name the restored table and no longer the old one.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
from typing import Any

TEMPLATE_KEY = "repoint.json"


def update_stack(emulator: Any, dr: Any, before: Any, template: Any, overrides: dict[str, str], checks: Any) -> tuple[Any, dict, dict, dict]:
    """The update, as moto's CloudFormation makes it; the resolver at the new
    parameters, the translated template, what moto was given, and the
    resources left to the APIs."""
    stack_name = before.pseudo["AWS::StackName"]
    _, translated = dr.translate(template, overrides)
    stack, deferred = dr.split(translated, dr.Checks(), dr.parameters_of(translated, overrides))
    emulator.client("s3").put_object(Bucket=dr.ARTIFACTS, Key=TEMPLATE_KEY, Body=json.dumps(stack).encode())
    cf = emulator.client("cloudformation")
    with contextlib.redirect_stdout(io.StringIO()):
        cf.update_stack(
            StackName=stack_name,
            TemplateURL=f"https://s3.amazonaws.com/{dr.ARTIFACTS}/{TEMPLATE_KEY}",
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in overrides.items()],
            Capabilities=["CAPABILITY_IAM"],
        )
    status = cf.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"]
    checks.equal(status, "UPDATE_COMPLETE", "stack status after the update")
    after = dr.Resolver(translated, dr.parameters_of(translated, overrides), stack_name)
    after.physical.update(before.physical)
    for summary in cf.list_stack_resources(StackName=stack_name)["StackResourceSummaries"]:
        after.physical[summary["LogicalResourceId"]] = summary.get("PhysicalResourceId", "")
    dr.attribute_getters(emulator, after, stack)
    for name, resource in stack["Resources"].items():
        if resource["Type"] == "AWS::Events::EventBus":
            after.physical[name] = after.get_att(name, "Name")
    for (name, attribute), getter in before.attributes.items():
        after.attributes.setdefault((name, attribute), getter)
    return after, translated, stack, deferred


def apply_what_moto_left(emulator: Any, dr: Any, before: Any, after: Any, stack: dict, deferred: dict, checks: Any) -> None:
    """What CloudFormation's update does and moto's does not, through the APIs."""
    lam, iam = emulator.client("lambda"), emulator.client("iam")
    for name, resource in stack["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role" and put_policies(iam, after.physical[name], after.resolve(resource["Properties"])):
            checks.gap("Policies of an AWS::IAM::Role on a stack update: moto's CloudFormation changes none; put through IAM's API", name)
        if resource["Type"] == "AWS::Lambda::Function":
            want = {k: str(v) for k, v in after.resolve(resource["Properties"]).get("Environment", {}).get("Variables", {}).items()}
            got = lam.get_function_configuration(FunctionName=after.physical[name]).get("Environment", {}).get("Variables", {})
            if got != want:
                lam.update_function_configuration(FunctionName=after.physical[name], Environment={"Variables": want})
                checks.gap("Environment of an AWS::Lambda::Function on a stack update: moto's CloudFormation left it; set through Lambda's API", name)
    for name, resource in stack["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Version":
            continue
        props = after.resolve(resource["Properties"])
        if before.resolve(resource["Properties"]).get("Description", "") != props.get("Description", ""):
            # A new description replaces the version: CloudFormation publishes one from the updated $LATEST.
            published = lam.publish_version(FunctionName=props["FunctionName"], Description=props.get("Description", ""))["Version"]
            after.attributes[(name, "Version")] = lambda n=published: n
            after.physical[name] = f"{after.physical[name].rsplit(':', 1)[0]}:{published}"
            checks.gap("an AWS::Lambda::Version replaced (its Description changed): moto's CloudFormation publishes none; published through Lambda's API", name)
    changed = {}
    for name, resource in deferred.items():
        if "Condition" in resource and not after.condition(resource["Condition"]):
            continue
        old, new = before.resolve(resource.get("Properties", {})), after.resolve(resource.get("Properties", {}))
        if json.dumps(old, sort_keys=True, default=str) != json.dumps(new, sort_keys=True, default=str):
            changed[name] = (resource, new)
    remade = {}
    for name, (resource, props) in changed.items():
        kind = resource["Type"]
        if kind == "AWS::Lambda::Alias":
            lam.update_alias(FunctionName=props["FunctionName"], Name=props["Name"], FunctionVersion=str(props["FunctionVersion"]))
            checks.gap("CodeDeploy's shift of an alias to the new version: moto runs no deployment; the alias moved through Lambda's API", name)
        elif kind == "AWS::Lambda::Function":
            lam.update_function_configuration(FunctionName=after.physical[name], Environment={"Variables": {k: str(v) for k, v in props.get("Environment", {}).get("Variables", {}).items()}})
        elif kind == "AWS::IAM::Role":
            put_policies(iam, after.physical[name], props)
        elif kind == "AWS::Lambda::EventSourceMapping":
            # Its source requires a replacement: CloudFormation makes the new mapping, then deletes the old.
            lam.delete_event_source_mapping(UUID=before.physical[name])
            remade[name] = resource
        elif kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard"):
            remade[name] = resource
        else:
            checks.check(False, f"{name} ({kind}) changed by the update, and the rehearsal has no stand-in for it")
    if remade:
        dr.create_deferred(emulator, after, remade, checks)
    for name in sorted(n for n in changed if changed[n][0]["Type"] != "AWS::Lambda::Alias"):
        checks.gap(f"{changed[name][0]['Type']}: updated through the service's API, as created (moto's CloudFormation has none)", name)


def put_policies(iam: Any, role: str, props: dict) -> bool:
    """The role's inline policies as `props` says; whether any changed."""
    changed = False
    for policy in props.get("Policies", []):
        document = {"Version": "2012-10-17", **policy["PolicyDocument"]}
        try:
            current = iam.get_role_policy(RoleName=role, PolicyName=policy["PolicyName"])["PolicyDocument"]
        except iam.exceptions.NoSuchEntityException:
            current = None
        if isinstance(current, str):
            # moto gives what CloudFormation put as Python's text of it.
            current = json.loads(dr_normalised(current))
        if current is None or {k: v for k, v in current.items() if k != "Version"} != {k: v for k, v in document.items() if k != "Version"}:
            iam.put_role_policy(RoleName=role, PolicyName=policy["PolicyName"], PolicyDocument=json.dumps(document))
            changed = True
    return changed


def dr_normalised(text: str) -> str:
    try:
        json.loads(text)
        return text
    except ValueError:
        return json.dumps(ast.literal_eval(text))


def live_versions(emulator: Any, resolver: Any, translated: dict) -> dict[str, str]:
    """The version each alias `live` points at."""
    lam = emulator.client("lambda")
    return {name: lam.get_alias(FunctionName=resolver.physical[name], Name="live")["FunctionVersion"]
            for name in translated["Resources"] if f"{name}Aliaslive" in translated["Resources"]}


def role_policies(emulator: Any, resolver: Any, translated: dict) -> dict[str, str]:
    """Each role's inline policies, as one JSON text (without Version)."""
    iam = emulator.client("iam")
    texts = {}
    for name, resource in translated["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role" and name in resolver.physical:
            role = resolver.physical[name]
            documents = {p: iam.get_role_policy(RoleName=role, PolicyName=p)["PolicyDocument"]
                         for p in iam.list_role_policies(RoleName=role)["PolicyNames"]}
            parsed = {p: json.loads(dr_normalised(d) if isinstance(d, str) else json.dumps(d)) for p, d in documents.items()}
            # A document put through the API carries the Version moto's API insists on.
            texts[name] = json.dumps({p: {k: v for k, v in d.items() if k != "Version"} for p, d in parsed.items()}, sort_keys=True)
    return texts


def same_policies_but_the_table(before: dict[str, str], after: dict[str, str], swaps: list[tuple[str, str]], checks: Any) -> None:
    """The roles allow after the repointing what they allowed before, on the
    restored table instead of the old one: so `make iam-check`'s verdict on
    the defaults holds for an adopted table."""
    for name, text in before.items():
        for old, new in swaps:
            text = re.sub(re.escape(old) + r'(?=["/])', new, text)
        checks.equal(json.loads(after.get(name, "{}")), json.loads(text), f"{name}'s policies, the old table's ARNs swapped for the restored one's")


def names_the_restored_table(emulator: Any, after: Any, translated: dict, old: str, new: str, stream: str,
                             live_before: dict[str, str], checks: Any) -> None:
    """Every part that used the old table now names the new one, and none the old."""
    lam, iam, ddb, cloudwatch = (emulator.client(s) for s in ("lambda", "iam", "dynamodb", "cloudwatch"))
    old_arn = ddb.describe_table(TableName=old)["Table"]["TableArn"]
    new_arn = ddb.describe_table(TableName=new)["Table"]["TableArn"]
    resources = translated["Resources"]
    # moto's version answers with $LATEST's environment, where Lambda's keeps its own:
    # so the alias must be on a new version, published for the adopted table.
    for name, number in live_versions(emulator, after, translated).items():
        described = lam.get_function_configuration(FunctionName=after.physical[name], Qualifier=number).get("Description", "")
        checks.check(number != live_before[name] and described.startswith(f"table {new};"),
                     f"{name}'s alias live on a new version for the adopted table (was {live_before[name]}, now {number}: {described!r})")
    for name, resource in resources.items():
        if resource["Type"] == "AWS::Lambda::Function":
            function = after.physical[name]
            qualifiers = ["$LATEST"] + (["live"] if f"{name}Aliaslive" in resources else [])
            for qualifier in qualifiers:
                variables = lam.get_function_configuration(FunctionName=function, Qualifier=qualifier).get("Environment", {}).get("Variables", {})
                checks.equal(variables.get("TABLE_NAME"), new, f"{name}:{qualifier} TABLE_NAME")
        if resource["Type"] == "AWS::IAM::Role":
            role = after.physical[name]
            text = json.dumps([iam.get_role_policy(RoleName=role, PolicyName=p)["PolicyDocument"] for p in iam.list_role_policies(RoleName=role)["PolicyNames"]])
            # The new name extends the old one (`<old>-restored-1`): an ARN ends at a quote or a slash.
            names_old = re.search(re.escape(old_arn) + r'["/]', text) is not None
            if new_arn in text or names_old:
                checks.check(not names_old, f"{name}'s policies name the restored table, not the old one")
    # The function or any of its versions and aliases.
    events = re.compile(f":function:{re.escape(after.physical['EventsFunction'])}(:|$)")
    mappings = lam.list_event_source_mappings()["EventSourceMappings"]
    sources = [m["EventSourceArn"] for m in mappings if events.search(m["FunctionArn"])]
    checks.equal(sources, [stream], f"the events function's stream mappings (of {[m['FunctionArn'] for m in mappings]})")
    for alarm in cloudwatch.describe_alarms()["MetricAlarms"]:
        tables = {d["Value"] for q in alarm.get("Metrics", []) for d in q.get("MetricStat", {}).get("Metric", {}).get("Dimensions", []) if d["Name"] == "TableName"}
        tables |= {d["Value"] for d in alarm.get("Dimensions", []) if d["Name"] == "TableName"}
        if tables & {old, new}:
            checks.equal(tables, {new}, f"alarm {alarm['AlarmName']}'s table")
    body = cloudwatch.get_dashboard(DashboardName=after.physical["Dashboard"])["DashboardBody"]
    checks.check(f'"{new}"' in body and f'"{old}"' not in body, "the dashboard's table graphs name the restored table")
