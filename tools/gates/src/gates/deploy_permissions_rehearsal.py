"""Rehearses, with the IAM simulator, the rights a first real deploy needs
(`make deploy-rehearsal`): template.yaml translated as CloudFormation would
(aws-sam-translator), for each stage as samconfig.toml deploys it (its stack
name and parameters; prod also with the optional front on), and every
resource's create operations (OPERATIONS: the calls CloudFormation makes as
the stage's execution role, on the ARN the resource will really have: the
generated <stack>-<LogicalId>-<suffix> names, the template's own names such
as the pre-traffic hook's CodeDeployHook_<stack>-pretraffic, each role with
the stage's permissions boundary) evaluated against that execution role of
deploy/github-deploy-role.yaml; then the stage's deploy role creating the
change set on the stack's real name. moto's rehearsal
(gates.deploy_rehearsal) creates the stack but checks no permission: this is where a
name outside a role's scope shows, offline.

A resource type with no known operations fails the rehearsal: nothing is
skipped silently. The rehearsal's own test: each of MUTATIONS (the two
faults a first deploy met: the hook's name, the prod stack's name; and a
boundary missing from the template) must fail it.

    petstore-deploy-permissions-rehearsal [--roles deploy/github-deploy-role.yaml] [--template template.yaml]
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tomllib
from pathlib import Path

from gates.cfn_intrinsics import NO_VALUE, Intrinsics
from gates.deploy_permissions import OPERATIONS, arn_of, physical_name
from gates.deploy_roles import ACCOUNT, REGION, ROOT, TEMPLATE, judge, load, role_arn, stage_stacks

SECRET = "0" * 64


def translate(template: Path, overrides: dict[str, str]) -> dict:
    """The translated template, as the deploy rehearsal makes it (imported
    here: it sets up moto's offline environment when imported)."""
    from gates import deploy_rehearsal
    return deploy_rehearsal.translate(template, overrides)[1]


class Stack(Intrinsics):
    """The translated template's intrinsics as one stage's stack resolves them."""

    def __init__(self, stack: str, translated: dict, overrides: dict[str, str]):
        self.stack, self.resources = stack, translated["Resources"]
        self.conditions = translated.get("Conditions", {})
        self.mappings = translated.get("Mappings", {})
        self.parameters = {name: overrides.get(name, str(spec.get("Default", "")))
                           for name, spec in translated.get("Parameters", {}).items()}

    def ref(self, name):
        if name in self.parameters:
            return self.parameters[name]
        pseudo = {"AWS::StackName": self.stack, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                  "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com", "AWS::NoValue": NO_VALUE}
        if name in pseudo:
            return pseudo[name]
        return physical_name(self, name)

    def get_att(self, logical, attribute):
        if attribute == "Arn":
            return arn_of(self, logical)
        if attribute == "StreamArn":
            return arn_of(self, logical) + "/stream/2026-01-01T00:00:00.000"
        if attribute == "QueueName":
            return physical_name(self, logical)
        return f"{logical}.{attribute}.example"

    def created(self) -> list[tuple[str, dict]]:
        """(logical id, resource with its properties resolved) for each resource the stack creates."""
        kept = []
        for logical, resource in self.resources.items():
            if "Condition" in resource and not self.condition(resource["Condition"]):
                continue
            kept.append((logical, {**resource, "Properties": self.resolve(resource.get("Properties", {}))}))
        return kept


def samconfig_overrides(stage: str) -> dict[str, str]:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    text = config[stage]["deploy"]["parameters"].get("parameter_overrides", "")
    return dict(pair.split("=", 1) for pair in shlex.split(text))


def configurations() -> list[tuple[str, str, dict[str, str]]]:
    """(stage, stack, parameters) as the pipeline deploys them (scripts/pipeline-deploy.sh)."""
    stacks = stage_stacks()
    out = []
    for stage, extra in (("dev", {}),
                         ("prod", {"DomainName": "api.example.com", "HostedZoneId": "Z0000000000000",
                                   "CertificateArn": f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/x"}),
                         ("prod", {"Front": "on", "FrontOriginSecret": SECRET})):
        boundary = f"arn:aws:iam::{ACCOUNT}:policy/{stacks[stage]}-{REGION}-boundary"
        out.append((stage, stacks[stage], {**samconfig_overrides(stage), **extra,
                                           "PermissionsBoundaryArn": boundary}))
    return out


def stage_checks(docs: dict, template: Path) -> tuple[list, list[str]]:
    labelled, unknown = [], []
    for stage, stack, overrides in configurations():
        execution = "DevExecutionRole" if stage == "dev" else "ProdExecutionRole"
        deployer = "DevDeployRole" if stage == "dev" else "ProdDeployRole"
        where = f"{stack} ({', '.join(f'{k}={v}' for k, v in overrides.items() if k in ('Front', 'DomainName'))})"
        labelled.append((f"{where}: {deployer} creates the change set on stack/{stack}", True, {
            "principal": role_arn(deployer), "action": "cloudformation:CreateChangeSet",
            "resource": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{stack}/0a1b2c3d",
            "context": {"cloudformation:RoleArn": role_arn(execution)},
            "identityPolicies": docs[deployer]["policies"], "resourcePolicy": None}))
        resolved = Stack(stack, translate(template, overrides), overrides)
        for logical, resource in resolved.created():
            operations = OPERATIONS.get(resource["Type"])
            if operations is None:
                unknown.append(f"{resource['Type']} ({logical})")
                continue
            # (action, ARN, context), and the resource's own policy where it has one (a key's).
            for action, arn, context, *policy in operations(resolved, logical, resource):
                labelled.append((f"{where}: {execution} {action} on {arn} {context or ''} for {logical}", True, {
                    "principal": role_arn(execution), "action": action, "resource": arn, "context": context,
                    "identityPolicies": docs[execution]["policies"], "resourcePolicy": (policy or [None])[0]}))
    return labelled, unknown


def failures(roles_text: str, template: Path) -> tuple[list[str], int]:
    labelled, unknown = stage_checks(load(roles_text), template)
    problems = [f"no operations known for {what}: add them to deploy_permissions.OPERATIONS" for what in unknown]
    return problems + judge(labelled), len(labelled)


# (what the edit brings back, file, old text, new text): each must fail the rehearsal.
MUTATIONS = [
    ("the execution role without the hook's name (CodeDeployHook_<stack>-*)", "roles",
     '                  # The pre-traffic hook: CodeDeploy\'s role may invoke only CodeDeployHook_*.\n'
     '                  - !Sub "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:'
     'CodeDeployHook_${ProdStackName}-dev-*"\n', ""),
    ("the prod deploy role on stack/petstore-prod, not samconfig.toml's prod stack", "roles",
     'stack/${ProdStackName}/*"', 'stack/${ProdStackName}-prod/*"'),
    ("a role of template.yaml without the boundary", "template",
     "      PermissionsBoundary: !If [HasPermissionsBoundary, !Ref PermissionsBoundaryArn, !Ref AWS::NoValue]\n"
     "      AssumeRolePolicyDocument:\n        Version: \"2012-10-17\"\n        Statement:\n"
     "          - Effect: Allow\n            Principal: { Service: codedeploy.amazonaws.com }",
     "      AssumeRolePolicyDocument:\n        Version: \"2012-10-17\"\n        Statement:\n"
     "          - Effect: Allow\n            Principal: { Service: codedeploy.amazonaws.com }"),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--roles", type=Path, default=TEMPLATE)
    parser.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    args = parser.parse_args()
    roles_text = args.roles.read_text()
    problems, count = failures(roles_text, args.template)
    if problems:
        print("deploy-permissions-rehearsal: FAILED", *problems, sep="\n  ")
        return 1
    print(f"deploy-permissions-rehearsal: {count} operations of dev, prod and prod with the front allowed to "
          "their stage's execution and deploy roles")
    missed = []
    for why, which, old, new in MUTATIONS:
        text = roles_text if which == "roles" else args.template.read_text()
        if old not in text:
            missed.append(f"{why}: the text to change is not in the {which} template (update MUTATIONS)")
            continue
        if which == "roles":
            found, _ = failures(text.replace(old, new, 1), args.template)
        else:
            mutated = ROOT / ".local" / "template-mutated.yaml"
            mutated.parent.mkdir(exist_ok=True)
            mutated.write_text(text.replace(old, new, 1))
            found, _ = failures(roles_text, mutated)
        if not found:
            missed.append(f"{why}: the rehearsal still passes")
    if missed:
        print("deploy-permissions-rehearsal: a broken deploy passes:", *missed, sep="\n  ")
        return 1
    print(f"deploy-permissions-rehearsal: each of {len(MUTATIONS)} broken deploys fails it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
