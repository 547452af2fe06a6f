"""The release rules the linters do not know, for `make lint-workflows`
(scripts/lint-workflows.sh), on each workflow file given:

- A job that may ask for an OIDC token (`id-token: write`, its own or the
  workflow's) runs nothing that compiles or installs third-party code:
  no `cargo`, `sam build`, `make`, `npm`, `pip`, `cargo-lambda`. Those run in
  a job without it, and the deploy jobs run only what such a job built:
  a dependency's build script or proc macro never sees the role's keys.
- A job that assumes the prod role (vars.AWS_PROD_DEPLOY_ROLE_ARN) names
  the environment prod (whose reviewers approve it; the role trusts nothing
  else) and runs only from main on a manual dispatch.

Exit 1, naming the file, the job and the rule.
"""

import re
import sys

import yaml

BUILDS = re.compile(r"(^|[\s;&|(])(cargo|cargo-lambda|make|npm|npx|pip3?|sam\s+build)(\s|$)", re.M)


def holds_id_token(permissions) -> bool:
    if permissions == "write-all":
        return True
    return isinstance(permissions, dict) and permissions.get("id-token") == "write"


def problems(path: str) -> list[str]:
    workflow = yaml.safe_load(open(path))
    found = []
    for name, job in (workflow.get("jobs") or {}).items():
        permissions = job.get("permissions", workflow.get("permissions"))
        text = yaml.safe_dump(job)
        if holds_id_token(permissions):
            for step in job.get("steps", []):
                if BUILDS.search(step.get("run", "")):
                    found.append(f"{path}: job {name} holds id-token: write and builds or installs: "
                                 f"{step.get('name') or step['run'].splitlines()[0]}")
        if "AWS_PROD_DEPLOY_ROLE_ARN" in text:
            if job.get("environment") != "prod" and (job.get("environment") or {}).get("name") != "prod":
                found.append(f"{path}: job {name} assumes the prod role without environment: prod")
            condition = str(job.get("if", ""))
            if "workflow_dispatch" not in condition or "refs/heads/main" not in condition:
                found.append(f"{path}: job {name} assumes the prod role but may run other than "
                             "from main on a manual dispatch")
    return found


def main() -> int:
    found = [p for path in sys.argv[1:] for p in problems(path)]
    print(*found, sep="\n", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
