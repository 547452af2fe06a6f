"""Proves the pipeline's roles (deploy/github-deploy-role.yaml) with the IAM
simulator `make iam-check` uses (gates.deploy_roles): `make
deploy-role-check`.

1. Trust. A GitHub Actions job asks STS for a role with its OIDC token; AWS
   compares the token's claims with the role's trust policy. The
   repository's subject template (repo, context, job_workflow_ref;
   docs/releases.md) makes `sub` the job's context (`ref:<ref>` without an
   environment, `pull_request`, `environment:<name>`) and the workflow file
   with the ref it was read from: `repo:OWNER/NAME:environment:prod:
   job_workflow_ref:OWNER/NAME/.github/workflows/release.yml@refs/heads/main`.
   The requests carry `sub` and `aud` only (AWS may not expose
   `job_workflow_ref` as a key of its own). The dev role must admit main's
   release.yml and nothing else; the publish role only its environment
   build, the prod role only its environment prod: not a tag's run, not a
   tag's own workflow, not a pull request, a fork, another repository,
   branch, workflow or environment, not the default subject, nor a token
   minted for another audience.
2. Scope. Each deploy role may drive CloudFormation on its own stage's stack
   (samconfig.toml's name) only, only through its stage's execution role,
   and touch only its part of the bucket; builds/ is written once, by the
   publish role alone. Each execution role creates roles only with its
   stage's permissions boundary, changes a role's trust only within it,
   never touches the pipeline's own roles, attaches only the named AWS
   managed policies, and reaches nothing of the other stage: its tables,
   functions, logs, custom domain, records, front; a role inside the
   boundary, even with AdministratorAccess, reaches only its own stage. The
   stage's secrets key, as template.yaml writes its policy: no grant, by
   anyone.
3. The check's own test: the template with one guard loosened (MUTATIONS)
   must fail step 1 or 2.

The simulator knows the condition keys AWS's service reference lists for
sts:AssumeRoleWithWebIdentity, which name GitHub's newer claims (`ref`,
`job_workflow_ref`, ...) but not the standard OIDC `sub` and `aud` that IAM
compares for every provider: it drops a key it does not know, so that
condition could never match. The check hands `sub` and `aud` to the
simulator under two keys it does know for that action and that hold a string
too (CARRIERS), in the trust policy and the request alike: the same
operators compare the same values.

Exit 1, naming the request and the decision, when a case is not as expected.

Usage: deploy-role-check.py [--template deploy/github-deploy-role.yaml]
"""

import argparse
import json
import sys
from pathlib import Path

from gates.deploy_role_cases import MUTATIONS, scope_cases, trust_cases
from gates.deploy_roles import PROVIDER, TEMPLATE, judge, load, role_arn

CLAIM = "token.actions.githubusercontent.com:"
# The standard OIDC keys, and the keys of the same action and type the
# simulator carries them under (see the docstring).
CARRIERS = {CLAIM + "sub": CLAIM + "actor_id", CLAIM + "aud": CLAIM + "enterprise_id"}


def carried(trust):
    """The trust policy with `sub` and `aud` under their carrier keys."""
    text = json.dumps(trust)
    for key, carrier in CARRIERS.items():
        if carrier in text:
            raise SystemExit(f"deploy-role-check: the trust uses {carrier}, which carries {key} here")
        text = text.replace(json.dumps(key), json.dumps(carrier))
    return json.loads(text)


def failures(text):
    """Every case whose decision is not the expected one, as lines to print."""
    docs = load(text)
    labelled = []
    for role, claims, expected in trust_cases():
        context = {CARRIERS.get(CLAIM + k, CLAIM + k): v for k, v in claims.items()}
        labelled.append((f"{role} assumed by {claims}", expected, {
            "principal": PROVIDER, "action": "sts:AssumeRoleWithWebIdentity", "resource": role_arn(role),
            "context": context, "identityPolicies": [], "resourcePolicy": carried(docs[role]["trust"]),
        }))
    for case in scope_cases(docs):
        who, action, resource, context, expected = case[:5]
        extra = case[5] if len(case) > 5 else {}
        policies = extra.get("policies", docs[who]["policies"] if who in docs else [])
        # AWS sets aws:PrincipalArn on every request (the bucket policy names the
        # publisher by it); the simulator takes it from the context.
        labelled.append((f"{who}: {action} on {resource} {context or ''}".rstrip(), expected, {
            "principal": role_arn(who), "action": action, "resource": resource,
            "context": {"aws:PrincipalArn": role_arn(who), **context},
            "identityPolicies": policies, "resourcePolicy": extra.get("resourcePolicy"),
            "boundary": extra.get("boundary"),
        }))
    return judge(labelled), len(labelled)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--template", default=str(TEMPLATE))
    args = parser.parse_args()
    text = Path(args.template).read_text()
    # The template must deploy before its roles can be trusted to mean anything.
    import subprocess
    subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), args.template], check=True)

    problems, count = failures(text)
    if problems:
        print("deploy-role-check: FAILED", *problems, sep="\n  ")
        return 1
    print(f"deploy-role-check: {count} requests as expected: the trust admits main's release workflow (dev), in "
          "the environment build (publish) and prod (prod), nothing else; each deploy and execution role confined "
          "to its stage, its edge included; roles only within the stage's boundary, the pipeline's untouched; "
          "builds written once, by the publisher alone")

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
