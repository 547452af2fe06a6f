"""The pipeline's roles (deploy/github-deploy-role.yaml) as the IAM simulator
sees them, for `make deploy-role-check` (gates.deploy_role_check: who
may assume them, what each may do, the check's own mutations) and for the
first-deploy rehearsal (gates.deploy_permissions_rehearsal: every
resource operation template.yaml's stacks need). The simulator is
@cloud-copilot/iam-simulate, through scripts/deploy-role-simulate.mjs, as
for `make iam-check`.

The stages' stacks are samconfig.toml's: the deploy roles must allow the
names `sam deploy --config-env STAGE` really uses.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

from gates.cfn_intrinsics import NO_VALUE, Intrinsics
from gates.repo import ROOT

TEMPLATE = ROOT / "deploy" / "github-deploy-role.yaml"
ACCOUNT = "123456789012"
REGION = "us-east-1"
REPO = "example-org/petstore"
PROVIDER = f"arn:aws:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com"
BUCKET = "petstore-pipeline-artifactbucket-abc123"
PIPELINE_STACK = "petstore-pipeline"
# Each stage's edge as the pipeline stack is given it: prod's as the first-deploy
# rehearsal deploys prod with a domain; dev's in a zone of its own.
EDGE = {"DevDomainName": "api.dev.example.com", "DevHostedZoneId": "Z1111111111111",
        "ProdDomainName": "api.example.com", "ProdHostedZoneId": "Z0000000000000"}
ROLES = ("BuildPublishRole", "DevDeployRole", "ProdDeployRole", "DevExecutionRole", "ProdExecutionRole")
BOUNDARIES = ("DevBoundary", "ProdBoundary")


def stage_stacks() -> dict[str, str]:
    """{stage: stack name} as samconfig.toml's config environments deploy them."""
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    return {stage: config[stage]["deploy"]["parameters"]["stack_name"] for stage in ("dev", "prod")}


def role_arn(name: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{PIPELINE_STACK}-{name}-XYZ"


def boundary_arn(stack: str) -> str:
    """The stage's boundary, as the pipeline stack names it (and pipeline-deploy.sh passes it)."""
    return f"arn:aws:iam::{ACCOUNT}:policy/{stack}-{REGION}-boundary"


class Roles(Intrinsics):
    """The template's intrinsics resolved as one stack in a fixed account,
    with the prod stack samconfig.toml deploys."""

    def __init__(self, template: dict):
        stacks = stage_stacks()
        self.parameters = {"GitHubRepository": REPO, "ProdStackName": stacks["prod"], "OidcProviderArn": "", **EDGE}
        self.conditions = template.get("Conditions", {})
        self.mappings = template.get("Mappings", {})
        self.boundaries = {"DevBoundary": boundary_arn(f"{stacks['prod']}-dev"),
                           "ProdBoundary": boundary_arn(stacks["prod"])}

    def ref(self, name):
        if name in self.parameters:
            return self.parameters[name]
        if name in self.boundaries:
            return self.boundaries[name]
        return {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                "AWS::StackName": PIPELINE_STACK, "AWS::NoValue": NO_VALUE,
                "GitHubOidcProvider": PROVIDER, "ArtifactBucket": BUCKET}[name]

    def get_att(self, logical, attribute):
        if attribute == "Arn" and logical in ROLES:
            return role_arn(logical)
        return {("ArtifactBucket", "Arn"): f"arn:aws:s3:::{BUCKET}"}[(logical, attribute)]


class StageStack(Intrinsics):
    """template.yaml's intrinsics as one stage's stack resolves them, for
    what deploy-role-check reads of it (the webhook secrets key's policy)."""

    def __init__(self, stack: str):
        self.stack = stack
        self.parameters: dict[str, object] = {}
        self.conditions: dict[str, object] = {}
        self.mappings: dict[str, object] = {}

    def ref(self, name):
        return {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                "AWS::StackName": self.stack}[name]

    def get_att(self, logical, attribute):
        return role_arn(f"{self.stack}-{logical}")


def stack_key_policy(stack: str, template: Path = ROOT / "template.yaml") -> dict:
    """The key policy template.yaml gives the stage's webhook secrets key."""
    from samtranslator.yaml_helper import yaml_parse

    resources = yaml_parse(template.read_text())["Resources"]
    return StageStack(stack).resolve(resources["WebhookSecretsKey"]["Properties"]["KeyPolicy"])


def load(text: str) -> dict:
    """{role: {trust, policies}, boundary: document, "BucketPolicy": document}."""
    from samtranslator.yaml_helper import yaml_parse

    template = yaml_parse(text)
    roles = Roles(template)
    resources = template["Resources"]
    loaded: dict = {}
    for name in ROLES:
        props = resources[name]["Properties"]
        loaded[name] = {
            "trust": roles.resolve(props["AssumeRolePolicyDocument"]),
            "policies": [roles.resolve(p["PolicyDocument"]) for p in props.get("Policies", [])],
        }
    for name in BOUNDARIES:
        loaded[name] = roles.resolve(resources[name]["Properties"]["PolicyDocument"])
        loaded[name + "Arn"] = roles.boundaries[name]
    loaded["BucketPolicy"] = roles.resolve(resources["ArtifactBucketPolicy"]["Properties"]["PolicyDocument"])
    return loaded


def simulate(checks: list[dict]) -> list[dict]:
    out = subprocess.run(
        ["node", str(ROOT / "scripts" / "deploy-role-simulate.mjs")],
        input=json.dumps({"account": ACCOUNT, "checks": checks}),
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    return json.loads(out.stdout)


def judge(labelled: list[tuple[str, bool, dict]]) -> list[str]:
    """Every (label, expected, check) whose decision is not the expected one."""
    problems = []
    results = simulate([check for *_, check in labelled])
    for (label, expected, _), result in zip(labelled, results, strict=True):
        decision = result["decision"]
        if decision == "Error":
            problems.append(f"{label}: simulator error {result.get('error')}")
        elif (decision == "Allowed") != expected:
            problems.append(f"{label}: {decision}, expected {'Allowed' if expected else 'denied'}")
    return problems
