"""Rebuild the dev stage's indexes that main changed since it created them
(docs/upgrade.md, "What the gate compares"; the release workflow's dev job,
through scripts/pipeline-deploy.sh, before its deploy).

The dev stage is deployed from every push to main, so it has the indexes of
a migration not yet released as main first defined them. When main changes
such an index's keys or projection again (free until it is released: the
migration then creates it in its final form), CloudFormation refuses the
change in place. This takes the stack there one update at a time: each such
index deleted, then created as the new template defines it (the states
gates.layout_dev computes and make layout-check proves), each an update
of the stack's own deployed template with only the data table's indexes
changed, its parameters as they are (a change set, as `sam deploy` makes). While an index is rebuilt, the lists
it serves answer 500 on dev (minutes: DynamoDB fills the new index from the
table); nothing else is touched.

    petstore-rebuild-indexes STAGE --template-file packaged.json [--released-file released.json] [--dry-run]

The dev job holds AWS credentials and so installs nothing: this runs there
on the standard library alone (python3), on the JSON the build job wrote
with cfn-lint (gates.pipeline_package: packaged.json, released.json,
covered by SHA256SUMS) and the stack's processed template (JSON). cfn-lint
is imported only to read a YAML file (layout_check.decode): without
--released-file, contract/released/template.yaml. make layout-check runs
the plan from the package's source under `python3 -S`, with nothing else
on the path or in the environment (tools/gates/tests/test_rebuild_stdlib.py).

It refuses an index the last release has (contract/released/template.yaml):
prod is never ahead of a release, and such a change needs a migration. Runs
with the deploy role's credentials; $ARTIFACT_BUCKET holds each state's
template (under deploys/STAGE/rebuild/), $CFN_EXECUTION_ROLE_ARN deploys it.
Safe to run again: it starts from the stack's indexes as deployed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from gates import layout_check, layout_dev, upgrade
from gates.repo import ROOT


def aws(*args: str) -> dict:
    done = subprocess.run(["aws", *args, "--output", "json"], capture_output=True, text=True)
    if done.returncode != 0:
        raise LookupError(done.stderr.strip())
    return json.loads(done.stdout or "{}")


def deployed(stack: str) -> tuple[dict, dict[str, str]]:
    """The stack's template as CloudFormation last deployed it (processed:
    no transform left) and its parameters."""
    body = aws("cloudformation", "get-template", "--stack-name", stack, "--template-stage", "Processed")
    template = body["TemplateBody"]
    if isinstance(template, str):  # JSON for a processed template; YAML (cfn-lint) only if not
        template = layout_dev.decode_text(template)
    described = aws("cloudformation", "describe-stacks", "--stack-name", stack)["Stacks"][0]
    return template, {p["ParameterKey"]: p["ParameterValue"] for p in described.get("Parameters", [])}


def released_template(path: str | None) -> dict:
    """The last release's template: `path` (JSON, as the build job decoded
    it), else contract/released/template.yaml through cfn-lint."""
    return layout_check.read_template(path or ROOT / layout_check.BASELINE)


def plan(template: dict, parameters: dict[str, str], new: dict,
         released: dict | None = None) -> list[tuple[str, dict]]:
    """The data table's states from the stack's to the new template's;
    `released` the last release's template (read from the baseline when None)."""
    old = layout_check.Rendered(template, parameters).resources.get("DataTable")
    settings = {k: v for k, v in parameters.items() if k != "DataLayoutStep"}
    wanted = layout_check.Rendered(new, settings).resources.get("DataTable")
    if old is None or wanted is None:
        return []
    states = layout_dev.rebuild_states(old["Properties"], wanted["Properties"])
    if released is None:
        released = released_template(None)
    shipped = layout_check.by_name(layout_check.Rendered(released, {}).resources["DataTable"]["Properties"]
                                   .get("GlobalSecondaryIndexes"))
    refused = sorted(set(layout_dev.index_rebuilds(old["Properties"], wanted["Properties"])) & shipped.keys())
    if refused:
        raise SystemExit(f"rebuild-indexes: the last release has {refused}: a change to them needs a migration "
                         "(docs/upgrade.md), not a rebuild")
    return states


def update(stack: str, stage: str, template: dict) -> None:
    """One change set of `template`, the stack's parameters kept, waited for
    (`aws cloudformation deploy`: the deploy role's change-set calls)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
        json.dump(template, file)
        file.flush()
        subprocess.run(["aws", "cloudformation", "deploy", "--stack-name", stack, "--template-file", file.name,
                        "--s3-bucket", os.environ["ARTIFACT_BUCKET"], "--s3-prefix", f"deploys/{stage}/rebuild",
                        "--role-arn", os.environ["CFN_EXECUTION_ROLE_ARN"],
                        "--capabilities", "CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND",
                        "--no-fail-on-empty-changeset"], check=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("stage")
    parser.add_argument("--template-file", required=True, help="the template the deploy after this deploys")
    parser.add_argument("--released-file", help="the last release's template as JSON (the build job's "
                        "released.json); default: contract/released/template.yaml, decoded with cfn-lint")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    stack = upgrade.stack_name(args.stage)
    try:
        template, parameters = deployed(stack)
    except LookupError:
        print(f"rebuild-indexes: no stack {stack}: created at the template's indexes, nothing to rebuild")
        return 0
    new = layout_check.read_template(args.template_file)
    states = plan(template, parameters, new, released_template(args.released_file))
    if not states:
        print(f"rebuild-indexes: {stack}: every index as the template defines it, nothing to rebuild")
        return 0
    for number, (what, table) in enumerate(states, 1):
        print(f"rebuild-indexes: {stack} update {number}/{len(states)}: {what}", flush=True)
        if args.dry_run:
            continue
        properties = template["Resources"]["DataTable"]["Properties"]
        properties["GlobalSecondaryIndexes"] = table["GlobalSecondaryIndexes"]
        properties["AttributeDefinitions"] = table["AttributeDefinitions"]
        update(stack, args.stage, template)
    return 0


if __name__ == "__main__":
    sys.exit(main())
