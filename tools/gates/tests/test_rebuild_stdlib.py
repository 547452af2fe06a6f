"""The dev job's index rebuild runs on the standard library alone (make
layout-check): the job holds AWS credentials and installs nothing, so
gates.rebuild_indexes must plan from the build job's JSON (packaged.json,
released.json: gates.pipeline_package) and the stack's processed template
without a third-party module. This decodes the templates here (cfn-lint, as
the build job does), then runs the planner as scripts/pipeline-deploy.sh
does, from the package's source (PYTHONPATH=tools/gates/src), under
`python3 -S` (no site module, so no site-packages), with an environment
holding nothing else, and `-P` (nothing of the working directory):

1. `-m gates.rebuild_indexes dev --dry-run`, against a stand-in `aws` that
   answers the stack's processed template (this template with GSI4v2
   projecting keys only) as JSON, and again as a JSON string: it plans
   GSI4v2 deleted, then created;
2. plan() in process: the same two states, a refusal when the last release
   has the index, no site-packages on the path and no module loaded beyond
   the standard library and the package.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gates import layout_check
from gates.repo import ROOT

pytestmark = pytest.mark.layout_check

SOURCE = ROOT / "tools" / "gates" / "src"
# The interpreter python3 names, itself: a version manager's shim (pyenv)
# would put its own bin, with its own aws, before the stand-in's.
PYTHON = subprocess.run([os.environ.get("PYTHON3", "python3"), "-I", "-S", "-c", "import sys; print(sys.executable)"],
                        capture_output=True, text=True, check=True).stdout.strip()
FAKE_AWS = """#!/bin/sh
case "$*" in
  *get-template*) cat "{dir}/get-template.json" ;;
  *describe-stacks*) echo '{{"Stacks": [{{"StackName": "dev", "Parameters": []}}]}}' ;;
  *) echo "stand-in aws: unexpected $*" >&2; exit 1 ;;
esac
"""
IN_PROCESS = """
import json, sys
from gates import rebuild_indexes as rebuild
load = lambda name: json.load(open(sys.argv[1] + "/" + name))
dev, new, released = load("dev.json"), load("packaged.json"), load("released.json")
states = [what for what, _ in rebuild.plan(dev, {}, new, released)]
assert states == ["delete GSI4v2", "create GSI4v2 as template.yaml defines it"], states
try:
    rebuild.plan(dev, {}, new, dev)
    raise AssertionError("an index the last release has was planned for a rebuild")
except SystemExit as refused:
    assert "needs a migration" in str(refused), refused
packages = [p for p in sys.path if "-packages" in p]
assert not packages, f"site-packages on the path: {packages}"
foreign = sorted({m.split(".")[0] for m in sys.modules} - set(sys.stdlib_module_names) - {"gates", "__main__"})
assert not foreign, f"third-party modules loaded: {foreign}"
print("plan() on the JSON:", states)
"""


def stdlib_python(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """python3 with the standard library and the package's source alone."""
    clean = {"PATH": os.environ["PATH"]} | (env or {}) | {"PYTHONPATH": str(SOURCE)}
    return subprocess.run([PYTHON, "-S", "-s", "-P", *args], capture_output=True, text=True, env=clean)


def keys_only(node: Any) -> bool:
    """GSI4v2 projecting keys only, wherever its `!If` puts it."""
    if isinstance(node, dict):
        if node.get("IndexName") == "GSI4v2":
            node["Projection"] = {"ProjectionType": "KEYS_ONLY"}
            return True
        return any([keys_only(value) for value in node.values()])
    if isinstance(node, list):
        return any([keys_only(value) for value in node])
    return False


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build job's JSON (packaged.json, released.json), the dev stage's
    template (dev.json) and a stand-in `aws` in bin/."""
    current = layout_check.read_template(ROOT / "template.yaml")
    released = layout_check.read_template(ROOT / layout_check.BASELINE)
    dev = json.loads(json.dumps(current))
    assert keys_only(dev["Resources"]["DataTable"]["Properties"]["GlobalSecondaryIndexes"]), \
        "template.yaml's DataTable has no GSI4v2 to rehearse a rebuild with"
    directory = tmp_path_factory.mktemp("rebuild")
    for name, template in (("packaged.json", current), ("released.json", released), ("dev.json", dev)):
        (directory / name).write_text(json.dumps(template))
    aws = directory / "bin" / "aws"
    aws.parent.mkdir()
    aws.write_text(FAKE_AWS.format(dir=directory))
    aws.chmod(0o755)
    return directory


@pytest.mark.parametrize("as_string", [False, True], ids=["a JSON object", "a JSON string"])
def test_dry_run_plans_the_rebuild_on_the_standard_library(build: Path, as_string: bool) -> None:
    dev = json.loads((build / "dev.json").read_text())
    (build / "get-template.json").write_text(json.dumps({"TemplateBody": json.dumps(dev) if as_string else dev}))
    done = stdlib_python("-m", "gates.rebuild_indexes", "dev",
                         "--template-file", str(build / "packaged.json"),
                         "--released-file", str(build / "released.json"), "--dry-run",
                         env={"PATH": f"{build / 'bin'}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "update 1/2: delete GSI4v2" in done.stdout, done.stdout
    assert "update 2/2: create GSI4v2" in done.stdout, done.stdout


def test_plan_loads_nothing_beyond_the_standard_library(build: Path) -> None:
    done = stdlib_python("-c", IN_PROCESS, str(build))
    assert done.returncode == 0, done.stdout + done.stderr
