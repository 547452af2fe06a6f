"""What CloudFormation does, as the stage's execution role, to create each
resource type template.yaml has (for gates.deploy_permissions_rehearsal):
the create handler's principal calls, on the ARN the resource really gets.
Names: a name property the template sets, else CloudFormation's generated
<stack>-<LogicalId>-<13 characters>, cut to the service's limit as
CloudFormation cuts it (the logical id first)."""

from __future__ import annotations

from gates.deploy_roles import ACCOUNT, BUCKET, REGION

SUFFIX = "ABCDEFGHIJKLM"
NAME_PROPERTY = {
    "AWS::Lambda::Function": "FunctionName", "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::CloudWatch::Alarm": "AlarmName", "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::Events::EventBus": "Name", "AWS::Events::Rule": "Name", "AWS::WAFv2::WebACL": "Name",
    "AWS::DynamoDB::Table": "TableName", "AWS::SQS::Queue": "QueueName", "AWS::IAM::Role": "RoleName",
    "AWS::CodeDeploy::Application": "ApplicationName",
    "AWS::CodeDeploy::DeploymentGroup": "DeploymentGroupName",
}
LIMIT = {"AWS::IAM::Role": 64, "AWS::Lambda::Function": 64, "AWS::SQS::Queue": 80, "AWS::Events::Rule": 64}
# Resources whose ARN is a generated id, not a name.
IDS = {"AWS::ApiGatewayV2::Api": "a1b2c3d4e5", "AWS::ApiGatewayV2::Stage": "$default",
       "AWS::CloudFront::Distribution": "E1ABCDEFGHIJK"}


def physical_name(stack, logical: str) -> str:
    resource = stack.resources[logical]
    kind = resource["Type"]
    if kind in IDS:
        return IDS[kind]
    given = resource.get("Properties", {}).get(NAME_PROPERTY.get(kind, ""))
    if given is not None:
        return str(stack.resolve(given))
    limit = LIMIT.get(kind, 255)
    room = limit - len(stack.stack) - len(SUFFIX) - 2
    return f"{stack.stack}-{logical[:max(room, 1)]}-{SUFFIX}"[:limit]


def arn(service: str, rest: str, region: str = REGION) -> str:
    return f"arn:aws:{service}:{region}:{ACCOUNT}:{rest}"


def arn_of(stack, logical: str) -> str:
    kind = stack.resources[logical]["Type"]
    name = physical_name(stack, logical)
    arns = {
        "AWS::Lambda::Function": lambda: arn("lambda", f"function:{name}"),
        "AWS::IAM::Role": lambda: f"arn:aws:iam::{ACCOUNT}:role/{name}",
        "AWS::DynamoDB::Table": lambda: arn("dynamodb", f"table/{name}"),
        "AWS::SQS::Queue": lambda: arn("sqs", name),
        "AWS::Events::EventBus": lambda: arn("events", f"event-bus/{name}"),
        "AWS::Logs::LogGroup": lambda: arn("logs", f"log-group:{name}"),
        "AWS::CloudWatch::Alarm": lambda: arn("cloudwatch", f"alarm:{name}"),
        "AWS::WAFv2::WebACL": lambda: arn("wafv2", f"global/webacl/{name}/0000-1111", "us-east-1"),
        "AWS::CodeDeploy::Application": lambda: arn("codedeploy", f"application:{name}"),
        "AWS::CloudFront::Distribution": lambda: f"arn:aws:cloudfront::{ACCOUNT}:distribution/{name}",
    }
    # What no operation here names by ARN (a rule's ARN needs its bus: rule()).
    return arns[kind]() if kind in arns else f"{logical}.Arn.example"


def function_arn(stack, reference) -> str:
    """A function given by name or ARN (a Ref or GetAtt of one), as its ARN."""
    text = str(reference)
    return text if text.startswith("arn:") else arn("lambda", f"function:{text}")


def function(stack, logical, resource):
    props = resource["Properties"]
    me = arn_of(stack, logical)
    calls = [("lambda:CreateFunction", me, {}), ("lambda:GetFunction", me, {}),
             ("iam:PassRole", props["Role"], {"iam:PassedToService": "lambda.amazonaws.com"})]
    code = props.get("Code", {})
    if "S3Bucket" in code:
        # Where the pipeline puts it: the artifact bucket's builds/<commit>/ (gates.pipeline_package).
        calls.append(("s3:GetObject", f"arn:aws:s3:::{BUCKET}/builds/0123abcd/{code['S3Key']}", {}))
    if "ReservedConcurrentExecutions" in props:
        calls.append(("lambda:PutFunctionConcurrency", me, {}))
    return calls


def role(stack, logical, resource):
    props = resource["Properties"]
    me = arn_of(stack, logical)
    boundary = {"iam:PermissionsBoundary": props["PermissionsBoundary"]} if "PermissionsBoundary" in props else {}
    calls = [("iam:CreateRole", me, boundary), ("iam:GetRole", me, {})]
    calls += [("iam:PutRolePolicy", me, boundary) for _ in props.get("Policies", [])]
    calls += [("iam:AttachRolePolicy", me, {**boundary, "iam:PolicyARN": policy})
              for policy in props.get("ManagedPolicyArns", [])]
    return calls


def on_function(*actions):
    def calls(stack, logical, resource):
        target = function_arn(stack, resource["Properties"]["FunctionName"])
        return [(action, target, {}) for action in actions]
    return calls


def named(*actions):
    def calls(stack, logical, resource):
        return [(action, arn_of(stack, logical), {}) for action in actions]
    return calls


def mapping(stack, logical, resource):
    target = function_arn(stack, resource["Properties"]["FunctionName"])
    return [("lambda:CreateEventSourceMapping", "*", {"lambda:FunctionArn": target}),
            ("lambda:GetEventSourceMapping", arn("lambda", "event-source-mapping:0000"), {})]


def rule(stack, logical, resource):
    props = resource["Properties"]
    bus = props.get("EventBusName")
    name = physical_name(stack, logical)
    me = arn("events", f"rule/{bus}/{name}" if bus and bus != "default" else f"rule/{name}")
    return [("events:PutRule", me, {}), ("events:PutTargets", me, {}), ("events:DescribeRule", me, {})]


def deployment_group(stack, logical, resource):
    props = resource["Properties"]
    group = arn("codedeploy", f"deploymentgroup:{props['ApplicationName']}/{physical_name(stack, logical)}")
    return [("codedeploy:CreateDeploymentGroup", group, {}),
            ("iam:PassRole", props["ServiceRoleArn"], {"iam:PassedToService": "codedeploy.amazonaws.com"})]


def queue_policy(stack, logical, resource):
    return [("sqs:SetQueueAttributes", arn("sqs", url.rsplit("/", 1)[-1]), {})
            for url in resource["Properties"]["Queues"]]


def apigateway(path):
    """API Gateway v2: the simulator knows no resource type for its POST
    (make deploy-rehearsal names it as not simulated); its ids scope no stage."""
    def calls(stack, logical, resource):
        return []
    return calls


def kms_key(stack, logical, resource):
    """A key has no name: made carrying its stack in a tag, then reached by it."""
    tags = {t["Key"]: stack.resolve(t["Value"]) for t in resource["Properties"].get("Tags", [])}
    me = arn("kms", "key/1234abcd-12ab-34cd-56ef-1234567890ab")
    made = {"aws:RequestTag/petstore-stack": tags.get("petstore-stack", "")}
    held = {"aws:ResourceTag/petstore-stack": tags.get("petstore-stack", "")}
    # A key's own policy must let IAM grant its administration (KMS reads the
    # key policy first): its statements for the account, as the key is made.
    policy = resource["Properties"]["KeyPolicy"]
    account = [stack.resolve(statement) for statement in policy["Statement"]
               if str(statement.get("Principal", {}).get("AWS", "")).find("root") >= 0
               or "root" in str(statement.get("Principal"))]
    key_policy = {"Version": policy.get("Version", "2012-10-17"), "Statement": account}
    return [("kms:CreateKey", "*", made), ("kms:TagResource", me, made, key_policy)] + [
        (action, me, held, key_policy) for action in ("kms:DescribeKey", "kms:EnableKeyRotation",
                                                      "kms:GetKeyPolicy", "kms:PutKeyPolicy", "kms:ListResourceTags")]


def record(stack, logical, resource):
    """A record change, with the names Route 53 gives IAM (lower case, no final dot)."""
    props = resource["Properties"]
    names = sorted({str(r["Name"]).lower().rstrip(".") for r in props.get("RecordSets", [props])})
    return [("route53:ChangeResourceRecordSets", f"arn:aws:route53:::hostedzone/{props['HostedZoneId']}",
             {"route53:ChangeResourceRecordSetsNormalizedRecordNames": names})]


OPERATIONS = {
    "AWS::Lambda::Function": function,
    "AWS::Lambda::Version": on_function("lambda:PublishVersion"),
    # PutProvisionedConcurrencyConfig on the alias: the simulator cannot tell
    # an alias's ARN from a version's; the role's lambda:* on the function's
    # name covers both.
    "AWS::Lambda::Alias": on_function("lambda:CreateAlias"),
    "AWS::Lambda::Permission": on_function("lambda:AddPermission"),
    "AWS::Lambda::EventSourceMapping": mapping,
    "AWS::IAM::Role": role,
    "AWS::DynamoDB::Table": named("dynamodb:CreateTable", "dynamodb:DescribeTable", "dynamodb:UpdateTimeToLive",
                                  "dynamodb:UpdateContinuousBackups", "dynamodb:TagResource"),
    "AWS::SQS::Queue": named("sqs:CreateQueue", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:TagQueue"),
    "AWS::SQS::QueuePolicy": queue_policy,
    "AWS::Logs::LogGroup": named("logs:CreateLogGroup", "logs:PutRetentionPolicy"),
    "AWS::CloudWatch::Alarm": named("cloudwatch:PutMetricAlarm", "cloudwatch:DescribeAlarms"),
    "AWS::CloudWatch::Dashboard": lambda stack, logical, resource: [
        ("cloudwatch:PutDashboard", f"arn:aws:cloudwatch::{ACCOUNT}:dashboard/{physical_name(stack, logical)}", {})],
    "AWS::Events::EventBus": named("events:CreateEventBus", "events:DescribeEventBus"),
    "AWS::KMS::Key": kms_key,
    "AWS::Events::Rule": rule,
    "AWS::CodeDeploy::Application": named("codedeploy:CreateApplication", "codedeploy:GetApplication"),
    "AWS::CodeDeploy::DeploymentGroup": deployment_group,
    "AWS::ApiGatewayV2::Api": apigateway("/apis"),
    "AWS::ApiGatewayV2::Stage": apigateway("/apis/{api}/stages"),
    "AWS::ApiGatewayV2::DomainName": apigateway("/domainnames"),
    "AWS::ApiGatewayV2::ApiMapping": apigateway("/domainnames/{domain}/apimappings"),
    "AWS::Route53::RecordSet": record,
    "AWS::Route53::RecordSetGroup": record,
    "AWS::WAFv2::WebACL": named("wafv2:CreateWebACL", "wafv2:GetWebACL"),
    "AWS::CloudFront::Distribution": lambda stack, logical, resource: [
        ("cloudfront:CreateDistribution", "*", {}),
        *named("cloudfront:GetDistribution", "cloudfront:TagResource")(stack, logical, resource)],
}
