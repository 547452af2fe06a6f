#!/usr/bin/env python3
"""The dev job's index rebuild runs on the standard library alone (make
layout-check): the job holds AWS credentials and installs nothing, so
scripts/rebuild-indexes.py must plan from the build job's JSON (packaged.json,
released.json: scripts/pipeline-package.py) and the stack's processed template
without a third-party module. This decodes the templates here (cfn-lint, as
the build job does), then runs under `python3 -I -S` (no site-packages):

1. rebuild-indexes.py dev --dry-run, against a stand-in `aws` that answers
   the stack's processed template (this template with GSI4v2 projecting keys
   only) as JSON, and again as a JSON string: it plans GSI4v2 deleted, then
   created;
2. plan() in process: the same two states, a refusal when the last release
   has the index, and no module loaded beyond the standard library and
   scripts/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import layout_check  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
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
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("rebuild_indexes", sys.argv[1] + "/rebuild-indexes.py")
rebuild = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rebuild)
load = lambda name: json.load(open(sys.argv[2] + "/" + name))
dev, new, released = load("dev.json"), load("packaged.json"), load("released.json")
states = [what for what, _ in rebuild.plan(dev, {}, new, released)]
assert states == ["delete GSI4v2", "create GSI4v2 as template.yaml defines it"], states
try:
    rebuild.plan(dev, {}, new, dev)
    raise AssertionError("an index the last release has was planned for a rebuild")
except SystemExit as refused:
    assert "needs a migration" in str(refused), refused
ours = {"rebuild_indexes", "layout_check", "layout_dev", "upgrade", "cfn_intrinsics", "__main__"}
foreign = sorted({m.split(".")[0] for m in sys.modules} - set(sys.stdlib_module_names) - ours)
assert not foreign, f"third-party modules loaded: {foreign}"
print("plan() on the JSON:", states)
"""


def fail(message: str) -> None:
    raise SystemExit(f"test-rebuild-stdlib: {message}")


def keys_only(node) -> bool:
    """GSI4v2 projecting keys only, wherever its `!If` puts it."""
    if isinstance(node, dict):
        if node.get("IndexName") == "GSI4v2":
            node["Projection"] = {"ProjectionType": "KEYS_ONLY"}
            return True
        return any([keys_only(value) for value in node.values()])
    if isinstance(node, list):
        return any([keys_only(value) for value in node])
    return False


def main() -> int:
    current = layout_check.read_template(ROOT / "template.yaml")
    released = layout_check.read_template(ROOT / layout_check.BASELINE)
    dev = json.loads(json.dumps(current))
    if not keys_only(dev["Resources"]["DataTable"]["Properties"]["GlobalSecondaryIndexes"]):
        fail("template.yaml's DataTable has no GSI4v2 to rehearse a rebuild with")
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        for name, template in (("packaged.json", current), ("released.json", released), ("dev.json", dev)):
            (directory / name).write_text(json.dumps(template))
        aws = directory / "bin" / "aws"
        aws.parent.mkdir()
        aws.write_text(FAKE_AWS.format(dir=directory))
        aws.chmod(0o755)
        env = os.environ | {"PATH": f"{aws.parent}{os.pathsep}{os.environ['PATH']}"}
        for how, body in (("a JSON object", dev), ("a JSON string", json.dumps(dev))):
            (directory / "get-template.json").write_text(json.dumps({"TemplateBody": body}))
            done = subprocess.run([PYTHON, "-I", "-S", str(SCRIPTS / "rebuild-indexes.py"), "dev",
                                   "--template-file", str(directory / "packaged.json"),
                                   "--released-file", str(directory / "released.json"), "--dry-run"],
                                  capture_output=True, text=True, env=env)
            if done.returncode != 0 or "update 1/2: delete GSI4v2" not in done.stdout \
                    or "update 2/2: create GSI4v2" not in done.stdout:
                fail(f"rebuild-indexes.py --dry-run under -I -S, processed template as {how}:\n"
                     f"{done.stdout}{done.stderr}")
        done = subprocess.run([PYTHON, "-I", "-S", "-c", IN_PROCESS, str(SCRIPTS), str(directory)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"plan() under -I -S:\n{done.stdout}{done.stderr}")
    print("test-rebuild-stdlib: rebuild-indexes.py plans GSI4v2's rebuild from JSON under python3 -I -S "
          "(no site-packages), refuses a released index, loads nothing beyond the standard library")
    return 0


if __name__ == "__main__":
    sys.exit(main())
