"""The deploy rehearsal's part for releases, stages and the custom domain
(gates.deploy_rehearsal): stand-ins for the resource types moto's
CloudFormation cannot create (the alias, CodeDeploy's application and
deployment groups, the event source mapping and permissions on an alias,
the hook's role and function that refer to them, the API Gateway domain, its
mapping and its Route 53 records), and the checks of what they made.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def release_makers(emulator: Any, resolver: Any, created: dict, checks: Any, region: str) -> dict[str, Callable[[str, dict], None]]:
    lam, iam, codedeploy, apigw, route53 = (
        emulator.client(s) for s in ("lambda", "iam", "codedeploy", "apigatewayv2", "route53")
    )
    stack = resolver.pseudo["AWS::StackName"]

    def alias(name: str, props: dict) -> None:
        made = lam.create_alias(FunctionName=props["FunctionName"], Name=props["Name"], FunctionVersion=str(props["FunctionVersion"]))
        resolver.physical[name] = made["AliasArn"]
        created[name] = props

    def mapping(name: str, props: dict) -> None:
        fields = ("EventSourceArn", "FunctionName", "BatchSize", "StartingPosition", "MaximumBatchingWindowInSeconds",
                  "ParallelizationFactor", "FunctionResponseTypes", "BisectBatchOnFunctionError", "MaximumRetryAttempts",
                  "MaximumRecordAgeInSeconds", "DestinationConfig", "FilterCriteria", "ScalingConfig")
        arguments = {k: props[k] for k in fields if k in props}
        if "ScalingConfig" in arguments:
            arguments["ScalingConfig"] = {k: int(v) for k, v in arguments["ScalingConfig"].items()}
        for number in ("BatchSize", "MaximumBatchingWindowInSeconds", "ParallelizationFactor", "MaximumRetryAttempts", "MaximumRecordAgeInSeconds"):
            if number in arguments:
                arguments[number] = int(arguments[number])
        made = lam.create_event_source_mapping(**arguments)
        resolver.physical[name] = made["UUID"]
        created[name] = props

    def application(name: str, props: dict) -> None:
        # CloudFormation names it <stack>-<logical id>-<suffix>.
        app = f"{stack}-{name}-REHEARSAL"
        codedeploy.create_application(applicationName=app, computePlatform=props.get("ComputePlatform", "Lambda"))
        resolver.physical[name] = app
        created[name] = props

    def group(name: str, props: dict) -> None:
        group_name = f"{stack}-{name}-REHEARSAL"
        codedeploy.create_deployment_group(
            applicationName=props["ApplicationName"],
            deploymentGroupName=group_name,
            deploymentConfigName=props["DeploymentConfigName"],
            serviceRoleArn=props["ServiceRoleArn"],
            alarmConfiguration={"enabled": bool(props.get("AlarmConfiguration", {}).get("Enabled")),
                                "alarms": [{"name": a["Name"]} for a in props.get("AlarmConfiguration", {}).get("Alarms", [])]},
            autoRollbackConfiguration={"enabled": True, "events": props["AutoRollbackConfiguration"]["Events"]},
            deploymentStyle={"deploymentType": "BLUE_GREEN", "deploymentOption": "WITH_TRAFFIC_CONTROL"},
        )
        resolver.physical[name] = group_name
        created[name] = {**props, "Group": group_name}

    def role(name: str, props: dict) -> None:
        role_name = f"{stack}-{name}-REHEARSAL"[:64]
        made = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=json.dumps(props["AssumeRolePolicyDocument"]))
        for policy in props.get("Policies", []):
            document = policy["PolicyDocument"]
            if "Version" not in document:
                # IAM takes a document without one (as 2008-10-17); moto's API refuses it.
                document = {"Version": "2012-10-17", **document}
                checks.gap("an inline policy without Version: moto's IAM API refuses it, IAM takes it; given Version 2012-10-17", name)
            iam.put_role_policy(RoleName=role_name, PolicyName=policy["PolicyName"], PolicyDocument=json.dumps(document))
        for arn in props.get("ManagedPolicyArns", []):
            iam.attach_role_policy(RoleName=role_name, PolicyArn=arn)
        resolver.physical[name] = role_name
        resolver.attributes[(name, "Arn")] = lambda arn=made["Role"]["Arn"]: arn
        created[name] = props

    def function(name: str, props: dict) -> None:
        fields = ("FunctionName", "Role", "Runtime", "Handler", "Code", "Description", "MemorySize", "Timeout",
                  "Environment", "Architectures", "TracingConfig", "LoggingConfig", "Tags")
        arguments = {k: props[k] for k in fields if k in props}
        arguments["Code"] = {"S3Bucket": props["Code"]["S3Bucket"], "S3Key": props["Code"]["S3Key"]}
        if "Tags" in arguments:
            arguments["Tags"] = {tag["Key"]: tag["Value"] for tag in arguments["Tags"]}
        for number in ("MemorySize", "Timeout"):
            if number in arguments:
                arguments[number] = int(arguments[number])
        if "Environment" in arguments:
            arguments["Environment"] = {"Variables": {k: str(v) for k, v in arguments["Environment"].get("Variables", {}).items()}}
        made = lam.create_function(**arguments)
        resolver.physical[name] = made["FunctionName"]
        resolver.attributes[(name, "Arn")] = lambda arn=made["FunctionArn"]: arn
        created[name] = props

    def domain(name: str, props: dict) -> None:
        made = apigw.create_domain_name(DomainName=props["DomainName"], DomainNameConfigurations=props["DomainNameConfigurations"])
        config = (made.get("DomainNameConfigurations") or [{}])[0]
        resolver.physical[name] = made["DomainName"]
        resolver.attributes[(name, "RegionalDomainName")] = lambda: config.get("ApiGatewayDomainName") or f"d-rehearsal.execute-api.{region}.amazonaws.com"
        resolver.attributes[(name, "RegionalHostedZoneId")] = lambda: config.get("HostedZoneId") or "Z1UJRXOUMOOFQ8"
        if not config.get("ApiGatewayDomainName"):
            checks.gap("RegionalDomainName of an AWS::ApiGatewayV2::DomainName: moto gives none; the rehearsal stands in one", name)
        created[name] = props

    def api_mapping(name: str, props: dict) -> None:
        made = apigw.create_api_mapping(ApiId=props["ApiId"], DomainName=props["DomainName"], Stage=props["Stage"])
        resolver.physical[name] = made["ApiMappingId"]
        created[name] = props

    def record(name: str, props: dict) -> None:
        route53.change_resource_record_sets(
            HostedZoneId=props["HostedZoneId"],
            ChangeBatch={"Changes": [{"Action": "CREATE", "ResourceRecordSet": {
                "Name": props["Name"], "Type": props["Type"],
                "AliasTarget": {**props["AliasTarget"], "EvaluateTargetHealth": False},
            }}]},
        )
        resolver.physical[name] = f"{props['Name']} {props['Type']}"
        created[name] = props

    return {
        "AWS::Lambda::Alias": alias,
        "AWS::Lambda::EventSourceMapping": mapping,
        "AWS::CodeDeploy::Application": application,
        "AWS::CodeDeploy::DeploymentGroup": group,
        "AWS::IAM::Role": role,
        "AWS::Lambda::Function": function,
        "AWS::ApiGatewayV2::DomainName": domain,
        "AWS::ApiGatewayV2::ApiMapping": api_mapping,
        "AWS::Route53::RecordSet": record,
    }


def version_getters(emulator: Any, resolver: Any, stack: dict) -> None:
    """Fn::GetAtt [<version>, Version]: the number moto published for it,
    read once, before anything publishes another."""
    lam = emulator.client("lambda")
    for name, resource in stack["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Version":
            continue
        function = resolver.resolve(resource["Properties"]["FunctionName"])
        numbers = [int(v["Version"]) for v in lam.list_versions_by_function(FunctionName=function)["Versions"] if v["Version"].isdigit()]
        number = str(max(numbers)) if numbers else "?"
        resolver.attributes[(name, "Version")] = lambda n=number: n
        resolver.physical[name] = f"{lam.get_function(FunctionName=function)['Configuration']['FunctionArn']}:{number}"


def check_releases(emulator: Any, resolver: Any, translated: dict, checks: Any) -> None:
    """Each released function's alias `live` on its published version; each
    deployment group under the stack's application, with the strategy the
    stage asks for, its rollback alarms (which exist and select the version)
    and automatic rollback."""
    lam, codedeploy, cloudwatch = (emulator.client(s) for s in ("lambda", "codedeploy", "cloudwatch"))
    resources = translated["Resources"]
    prod = resolver.ref("Stage") == "prod"
    want_config = f"CodeDeployDefault.Lambda{resolver.ref('ReleaseStrategy') if prod else 'AllAtOnce'}"
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::Alias":
            continue
        props = resolver.resolve(resource["Properties"])
        got = lam.get_alias(FunctionName=props["FunctionName"], Name="live")
        checks.equal(got["FunctionVersion"], str(props["FunctionVersion"]), f"{name} points at the published version")
        checks.check(got["FunctionVersion"].isdigit(), f"{name}: a published version, not $LATEST ({got['FunctionVersion']})")
        update = resolver.resolve(resource.get("UpdatePolicy", {}).get("CodeDeployLambdaAliasUpdate", {}))
        group = codedeploy.get_deployment_group(applicationName=update["ApplicationName"], deploymentGroupName=update["DeploymentGroupName"])["deploymentGroupInfo"]
        checks.equal(group.get("deploymentConfigName"), want_config, f"{name}'s release strategy (Stage {resolver.ref('Stage')})")
        alarms = [a["name"] for a in group.get("alarmConfiguration", {}).get("alarms", [])]
        if not alarms:
            checks.gap("alarmConfiguration of a CodeDeploy deployment group: moto's API returns none; the alarms given to it are checked", name)
            logical = resource["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]["DeploymentGroupName"]["Ref"]
            given = resolver.resolve(resources[logical]["Properties"].get("AlarmConfiguration", {}))
            alarms = [a["Name"] for a in given.get("Alarms", [])]
        described = {a["AlarmName"]: a for a in cloudwatch.describe_alarms(AlarmNames=alarms)["MetricAlarms"]} if alarms else {}
        checks.check(bool(alarms) and set(alarms) == set(described), f"{name}: its rollback alarms exist ({alarms})")
        for alarm in described.values():
            text = json.dumps(alarm, default=str)
            checks.check(f'"Value": "{got["FunctionVersion"]}"' in text, f"{alarm['AlarmName']} selects version {got['FunctionVersion']}")
        checks.check(update.get("BeforeAllowTrafficHook", "").startswith("CodeDeployHook_"),
                     f"{name}: the pre-traffic hook {update.get('BeforeAllowTrafficHook')} is one CodeDeploy's role may invoke (CodeDeployHook_*)")
    checks.gap("CodeDeploy's traffic shifting, its hooks and its rollbacks: moto creates the application and groups but runs no deployment; "
               "the hook is tested against cargo lambda watch (scripts/test-pretraffic.sh)", "ServerlessDeploymentApplication")


def check_domain(emulator: Any, resolver: Any, translated: dict, checks: Any) -> None:
    """Without the API's domain (HasDomain: DomainName set and the front
    off, which takes the domain itself), nothing of it; else the domain
    (TLS 1.2, regional), its mapping to the API's stage, its records."""
    apigw, route53 = emulator.client("apigatewayv2"), emulator.client("route53")
    names = [d["DomainName"] for d in apigw.get_domain_names().get("Items", [])]
    domain = resolver.ref("DomainName")
    api = apigw.get_api(ApiId=resolver.physical["HttpApi"])
    disabled = resolver.condition("DisablesExecuteApi")
    checks.equal(bool(api.get("DisableExecuteApiEndpoint")), disabled, "the execute-api endpoint is off only with a domain that asks so")
    block = [n for n, r in translated["Resources"].items() if r.get("Condition") in ("HasDomain", "HasDomainRecords")]
    if not resolver.condition("HasDomain"):
        checks.check(not any(n in resolver.physical for n in block), f"no domain for the API: none of {block} created")
        return
    checks.check(domain in names, f"the custom domain {domain} exists")
    got = apigw.get_domain_name(DomainName=domain)
    config = (got.get("DomainNameConfigurations") or [{}])[0]
    checks.equal((config.get("SecurityPolicy"), config.get("EndpointType")), ("TLS_1_2", "REGIONAL"), f"{domain}: TLS 1.2, regional")
    mappings = apigw.get_api_mappings(DomainName=domain).get("Items", [])
    checks.check(any(m.get("Stage") == "$default" for m in mappings), f"{domain} maps to the API's $default stage: {mappings}")
    checks.check(all(n in resolver.physical for n in block), f"the domain block created: {block}")
    zone = resolver.ref("HostedZoneId")
    records = route53.list_resource_record_sets(HostedZoneId=zone)["ResourceRecordSets"]
    aliased = sorted(r["Type"] for r in records if r["Name"].rstrip(".") == domain and "AliasTarget" in r)
    checks.equal(aliased, ["A", "AAAA"], f"{domain}'s alias records in zone {zone}")


# Names that are only unique within their parent (a stage within its API, a
# permission's statement id within its function's policy, a mapping within
# its domain): the same name in two stacks is no shared resource.
SCOPED = {"AWS::ApiGatewayV2::Stage", "AWS::Lambda::Permission", "AWS::ApiGatewayV2::ApiMapping"}


def physical_ids(emulator: Any, stack_name: str, resolver: Any) -> set[str]:
    """The account-wide names and ids of a stack's resources."""
    cf = emulator.client("cloudformation")
    summaries = cf.list_stack_resources(StackName=stack_name)["StackResourceSummaries"]
    ids = {s.get("PhysicalResourceId", "") for s in summaries if s["ResourceType"] not in SCOPED}
    resources = resolver.template["Resources"]
    ids |= {str(v) for n, v in resolver.physical.items() if resources.get(n, {}).get("Type") not in SCOPED}
    return {i for i in ids if i}


def check_apart(emulator: Any, stacks: dict[str, tuple[Any, dict]], checks: Any) -> None:
    """Two stages in one account and region share nothing: no resource, and
    no function's environment or role names another stage's resource."""
    (a, (ra, _)), (b, (rb, _)) = list(stacks.items())[:2]
    ids_a, ids_b = physical_ids(emulator, a, ra), physical_ids(emulator, b, rb)
    checks.check(not ids_a & ids_b, f"{a} and {b} share no resource: {sorted(ids_a & ids_b)[:5]}")
    lam, iam = emulator.client("lambda"), emulator.client("iam")
    for own, other, resolver, other_ids in ((a, b, ra, ids_b), (b, a, rb, ids_a)):
        for name, physical in resolver.physical.items():
            try:
                config = lam.get_function_configuration(FunctionName=physical)
            except Exception:  # noqa: BLE001 - not a function
                continue
            if ":" in physical:
                continue
            role = config["Role"].rsplit("/", 1)[-1]
            text = json.dumps(config.get("Environment", {})) + json.dumps(
                [iam.get_role_policy(RoleName=role, PolicyName=p)["PolicyDocument"] for p in iam.list_role_policies(RoleName=role)["PolicyNames"]],
                default=str)
            named = sorted(i for i in other_ids if len(i) > 12 and i in text)
            checks.check(not named, f"{own}'s {name} names nothing of {other}: {named[:3]}")
