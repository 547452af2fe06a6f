#!/usr/bin/env python3
"""Proves the pipeline's deploy roles (deploy/github-deploy-role.yaml) with
the IAM simulator `make iam-check` uses (@cloud-copilot/iam-simulate, through
scripts/deploy-role-simulate.mjs): `make deploy-role-check`.

1. Trust. A GitHub Actions job asks STS for a role with its OIDC token; AWS
   compares the token's `sub` and `aud` with the role's trust policy. The
   `sub` of a job without `environment:` is `repo:OWNER/NAME:ref:<ref>`, of a
   pull request `repo:OWNER/NAME:pull_request`, of a job with an environment
   `repo:OWNER/NAME:environment:<name>` (the workflows use none, so that the
   ref is what the trust checks). The dev role must admit main and nothing
   else; the prod role version tags and nothing else: not a pull request, a
   fork, another repository, another branch or tag, an environment, nor a
   token minted for another audience.
2. Scope. Each role may drive CloudFormation on its own stage's stack only,
   only through the execution role, and touch only its part of the bucket.
   The simulator knows the condition keys AWS's service reference lists for
   sts:AssumeRoleWithWebIdentity, which name GitHub's newer claims (`ref`,
   `repository`, `job_workflow_ref`, ...) but not the standard OIDC `sub` and
   `aud` that IAM compares for every provider and that the trust uses (as
   AWS and GitHub advise): it drops a key it does not know, so that condition
   could never match. The check therefore hands `sub` and `aud` to the
   simulator under two keys it does know for that action and that hold a
   string too (CARRIERS), in the trust policy and the request alike: the
   same operators (StringEquals, StringLike) compare the same values.
3. The check's own test: the template with its trust or scope loosened (each
   mutation one edit a hurried change could make) must fail step 1 or 2.

Exit 1, naming the request and the decision, when a case is not as expected.

Usage: deploy-role-check.py [--template deploy/github-deploy-role.yaml]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from cfn_intrinsics import Intrinsics

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "github-deploy-role.yaml"
ACCOUNT = "123456789012"
REGION = "us-east-1"
REPO = "example-org/petstore"
PROVIDER = f"arn:aws:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com"
BUCKET = "petstore-pipeline-artifactbucket-abc123"
ASSUME = "sts:AssumeRoleWithWebIdentity"
AUDIENCE = "sts.amazonaws.com"

# (role, sub, aud, expected): who may assume which role.
TRUST_CASES = [
    ("DevDeployRole", f"repo:{REPO}:ref:refs/heads/main", AUDIENCE, True),
    ("ProdDeployRole", f"repo:{REPO}:ref:refs/tags/v1.4.0", AUDIENCE, True),
    ("ProdDeployRole", f"repo:{REPO}:ref:refs/tags/v2.0.0-rc.1", AUDIENCE, True),
    # A pull request, from a branch of the repository or from a fork.
    ("DevDeployRole", f"repo:{REPO}:pull_request", AUDIENCE, False),
    ("ProdDeployRole", f"repo:{REPO}:pull_request", AUDIENCE, False),
    # A fork's own runs carry the fork's name.
    ("DevDeployRole", "repo:someone-else/petstore:ref:refs/heads/main", AUDIENCE, False),
    ("ProdDeployRole", "repo:someone-else/petstore:ref:refs/tags/v1.4.0", AUDIENCE, False),
    # Another repository of the same owner, and a name that only starts alike.
    ("DevDeployRole", "repo:example-org/other:ref:refs/heads/main", AUDIENCE, False),
    ("ProdDeployRole", "repo:example-org/other:ref:refs/tags/v1.4.0", AUDIENCE, False),
    ("DevDeployRole", f"repo:{REPO}-fork:ref:refs/heads/main", AUDIENCE, False),
    ("ProdDeployRole", f"repo:{REPO}-fork:ref:refs/tags/v1.4.0", AUDIENCE, False),
    # Another branch, a branch named like main, a tag that is no version.
    ("DevDeployRole", f"repo:{REPO}:ref:refs/heads/feature", AUDIENCE, False),
    ("DevDeployRole", f"repo:{REPO}:ref:refs/heads/main-old", AUDIENCE, False),
    ("ProdDeployRole", f"repo:{REPO}:ref:refs/heads/main", AUDIENCE, False),
    ("ProdDeployRole", f"repo:{REPO}:ref:refs/heads/v1.4.0", AUDIENCE, False),
    ("ProdDeployRole", f"repo:{REPO}:ref:refs/tags/release-1", AUDIENCE, False),
    ("DevDeployRole", f"repo:{REPO}:ref:refs/tags/v1.4.0", AUDIENCE, False),
    # A job with an environment: its sub names no ref.
    ("DevDeployRole", f"repo:{REPO}:environment:dev", AUDIENCE, False),
    ("ProdDeployRole", f"repo:{REPO}:environment:prod", AUDIENCE, False),
    # A token minted for another audience.
    ("DevDeployRole", f"repo:{REPO}:ref:refs/heads/main", "https://github.com/example-org", False),
    ("ProdDeployRole", f"repo:{REPO}:ref:refs/tags/v1.4.0", "https://github.com/example-org", False),
]


def stack_arn(name):
    return f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{name}/0a1b2c3d-0000-0000-0000-000000000000"


EXECUTION_ROLE = f"arn:aws:iam::{ACCOUNT}:role/petstore-pipeline-CloudFormationExecutionRole-ABC"
# (role, action, resource, context, expected): what a role may do once assumed.
SCOPE_CASES = [
    *(
        (role, "cloudformation:CreateChangeSet", stack_arn(f"petstore-{stage}"),
         {"cloudformation:RoleArn": EXECUTION_ROLE}, role == owner)
        for role in ("DevDeployRole", "ProdDeployRole")
        for stage, owner in (("dev", "DevDeployRole"), ("prod", "ProdDeployRole"))
    ),
    ("DevDeployRole", "cloudformation:ExecuteChangeSet", stack_arn("petstore-dev"), {}, True),
    ("DevDeployRole", "cloudformation:ExecuteChangeSet", stack_arn("petstore-prod"), {}, False),
    # Without the execution role the change would run with the deploy role's rights.
    ("DevDeployRole", "cloudformation:CreateChangeSet", stack_arn("petstore-dev"), {}, False),
    ("ProdDeployRole", "cloudformation:CreateChangeSet", stack_arn("petstore-prod"),
     {"cloudformation:RoleArn": f"arn:aws:iam::{ACCOUNT}:role/Admin"}, False),
    ("DevDeployRole", "cloudformation:CreateChangeSet", stack_arn("someone-elses-stack"),
     {"cloudformation:RoleArn": EXECUTION_ROLE}, False),
    ("DevDeployRole", "cloudformation:DeleteStack", stack_arn("petstore-dev"), {}, False),
    ("DevDeployRole", "iam:PassRole", EXECUTION_ROLE,
     {"iam:PassedToService": "cloudformation.amazonaws.com"}, True),
    *(
        (role, "iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/Admin",
         {"iam:PassedToService": "cloudformation.amazonaws.com"}, False)
        for role in ("DevDeployRole", "ProdDeployRole")
    ),
    ("DevDeployRole", "iam:CreateRole", f"arn:aws:iam::{ACCOUNT}:role/petstore-dev-x", {}, False),
    ("DevDeployRole", "lambda:UpdateFunctionCode",
     f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:petstore-dev-PetsFunction-X", {}, False),
    ("DevDeployRole", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/builds/0123abc/packaged.yaml", {}, True),
    # A tag deploys what main built: it cannot write a build of its own.
    ("ProdDeployRole", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/builds/0123abc/packaged.yaml", {}, False),
    ("ProdDeployRole", "s3:GetObject", f"arn:aws:s3:::{BUCKET}/builds/0123abc/packaged.yaml", {}, True),
    ("DevDeployRole", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/deploys/prod/t.template", {}, False),
    ("DevDeployRole", "s3:GetObject", "arn:aws:s3:::another-bucket/x", {}, False),
]

# The standard OIDC keys, and the keys of the same action and type the
# simulator carries them under (see the docstring).
CARRIERS = {
    "token.actions.githubusercontent.com:sub": "token.actions.githubusercontent.com:job_workflow_ref",
    "token.actions.githubusercontent.com:aud": "token.actions.githubusercontent.com:workflow",
}

# (what the edit loosens, old text, new text): each must fail the check. The
# edit applies to the text's first place (the dev role comes first).
MUTATIONS = [
    ("dev trust: any ref of the repository",
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:ref:refs/heads/main"',
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:*"'),
    ("dev trust: no sub condition",
     '                "token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:ref:refs/heads/main"\n',
     ""),
    ("prod trust: any tag",
     '!Sub "repo:${GitHubRepository}:ref:refs/tags/v*"',
     '!Sub "repo:${GitHubRepository}:ref:refs/tags/*"'),
    ("prod trust: any repository of any owner with a v tag",
     '!Sub "repo:${GitHubRepository}:ref:refs/tags/v*"',
     '"repo:*:ref:refs/tags/v*"'),
    ("prod trust: no audience",
     '              StringEquals:\n                "token.actions.githubusercontent.com:aud": sts.amazonaws.com\n              StringLike:',
     "              StringLike:"),
    ("dev scope: every stack",
     '!Sub "arn:${AWS::Partition}:cloudformation:${AWS::Region}:${AWS::AccountId}:stack/${StackNamePrefix}-dev/*"\n                # A change',
     '"*"\n                # A change'),
    ("dev scope: any role passed",
     "                Action: iam:PassRole\n                Resource: !GetAtt CloudFormationExecutionRole.Arn\n",
     '                Action: iam:PassRole\n                Resource: "*"\n'),
]


class Roles(Intrinsics):
    """The template's intrinsics resolved as one stack in a fixed account."""

    def __init__(self, template):
        self.parameters = {"GitHubRepository": REPO, "StackNamePrefix": "petstore", "OidcProviderArn": ""}
        self.conditions = template.get("Conditions", {})

    def ref(self, name):
        if name in self.parameters:
            return self.parameters[name]
        return {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                "GitHubOidcProvider": PROVIDER, "ArtifactBucket": BUCKET}[name]

    def get_att(self, logical, attribute):
        return {("ArtifactBucket", "Arn"): f"arn:aws:s3:::{BUCKET}",
                ("CloudFormationExecutionRole", "Arn"): EXECUTION_ROLE}[(logical, attribute)]


def load(text):
    from samtranslator.yaml_helper import yaml_parse

    template = yaml_parse(text)
    roles = Roles(template)
    resources = template["Resources"]

    def role(name):
        props = resources[name]["Properties"]
        return {
            "trust": roles.resolve(props["AssumeRolePolicyDocument"]),
            "policies": [roles.resolve(p["PolicyDocument"]) for p in props.get("Policies", [])],
        }

    return {name: role(name) for name in ("DevDeployRole", "ProdDeployRole")}


def carried(trust):
    """The trust policy with `sub` and `aud` under their carrier keys."""
    text = json.dumps(trust)
    for key, carrier in CARRIERS.items():
        if carrier in text:
            raise SystemExit(f"deploy-role-check: the trust uses {carrier}, which carries {key} here")
        text = text.replace(json.dumps(key), json.dumps(carrier))
    return json.loads(text)


def simulate(checks):
    out = subprocess.run(
        ["node", str(ROOT / "scripts" / "deploy-role-simulate.mjs")],
        input=json.dumps({"account": ACCOUNT, "checks": checks}),
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    return json.loads(out.stdout)


def role_arn(name):
    return f"arn:aws:iam::{ACCOUNT}:role/petstore-pipeline-{name}-XYZ"


def failures(text):
    """Every case whose decision is not the expected one, as lines to print."""
    roles = load(text)
    checks, labels = [], []
    for role, sub, aud, expected in TRUST_CASES:
        checks.append({
            "principal": PROVIDER, "action": ASSUME, "resource": role_arn(role),
            "context": {CARRIERS["token.actions.githubusercontent.com:sub"]: sub,
                        CARRIERS["token.actions.githubusercontent.com:aud"]: aud},
            "identityPolicies": [], "resourcePolicy": carried(roles[role]["trust"]),
        })
        labels.append((f"{role} assumed by sub={sub} aud={aud}", expected))
    for role, action, resource, context, expected in SCOPE_CASES:
        checks.append({
            "principal": role_arn(role), "action": action, "resource": resource,
            "context": context, "identityPolicies": roles[role]["policies"], "resourcePolicy": None,
        })
        labels.append((f"{role}: {action} on {resource} {context or ''}".rstrip(), expected))
    problems = []
    for (label, expected), result in zip(labels, simulate(checks), strict=True):
        decision = result["decision"]
        if decision == "Error":
            problems.append(f"{label}: simulator error {result.get('error')}")
        elif (decision == "Allowed") != expected:
            problems.append(f"{label}: {decision}, expected {'Allowed' if expected else 'denied'}")
    return problems, len(checks)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--template", default=str(TEMPLATE))
    args = parser.parse_args()
    text = Path(args.template).read_text()
    # The template must deploy before its roles can be trusted to mean anything.
    subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), args.template], check=True)

    problems, count = failures(text)
    if problems:
        print("deploy-role-check: FAILED", *problems, sep="\n  ")
        return 1
    allowed = sum(1 for *_, e in TRUST_CASES if e)
    print(f"deploy-role-check: {count} requests as expected: the trust admits main (dev) and v tags (prod), "
          f"{len(TRUST_CASES) - allowed} other callers denied; each role confined to its stage's stack")

    missed = []
    for why, old, new in MUTATIONS:
        if old not in text:
            missed.append(f"{why}: the text to change is not in the template (update MUTATIONS)")
            continue
        mutated_problems, _ = failures(text.replace(old, new, 1))
        if not mutated_problems:
            missed.append(f"{why}: the check still passes")
    if missed:
        print("deploy-role-check: a loosened template passes:", *missed, sep="\n  ")
        return 1
    print(f"deploy-role-check: each of {len(MUTATIONS)} loosened templates fails it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
