#!/usr/bin/env python3
"""scripts/upgrade.py asks before each prod change set unless --yes: the
`sam deploy` it runs for a stage whose samconfig.toml sets
confirm_changeset (prod) confirms, and skips that only when told --yes; a
stage that does not ask (dev) is not asked. Run by `make lint-workflows`."""

import importlib.util
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("upgrade", ROOT / "scripts" / "upgrade.py")
upgrade = importlib.util.module_from_spec(spec)
spec.loader.exec_module(upgrade)

config = tomllib.loads((ROOT / "samconfig.toml").read_text())
assert config["prod"]["deploy"]["parameters"]["confirm_changeset"] is True, "samconfig.toml's prod no longer asks"
assert config["dev"]["deploy"]["parameters"]["confirm_changeset"] is False
SKIPS = "--no-confirm-changeset"
assert SKIPS not in upgrade.deploy_command("prod", "t.yaml", "2", yes=False), "prod deployed without asking"
assert SKIPS in upgrade.deploy_command("prod", "t.yaml", "2", yes=True)
assert SKIPS in upgrade.deploy_command("dev", "t.yaml", "2", yes=False)
print("test-upgrade-confirm: upgrade.py asks before each prod change set unless --yes")
sys.exit(0)
