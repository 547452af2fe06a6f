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
assert "DrainingOrderRate=10000" in upgrade.deploy_command("dev", "t.yaml", "done", yes=False, draining="10000")

# Lowering the order lists' shards drains the old ones until a reshard.
template = (ROOT / "template.yaml").read_text()
default, rates = upgrade.capacity(template)
assert rates[default] == (4, 1), rates[default]  # pet lists: 1 shard at every rate (stock items)
released = {"DataLayoutStep": "done", "OrderListShards": "32", "PetListShards": "1"}
assert upgrade.draining_rate(released, template) == "10000", "1.1.0's 32 shards drained"
assert upgrade.draining_rate({"OrderRate": default, "DrainingOrderRate": "none"}, template) is None
assert upgrade.draining_rate({"OrderRate": "100", "DrainingOrderRate": "none"}, template) is None, "raising needs none"
assert upgrade.draining_rate({"OrderRate": "2500"}, template) == "2500"
assert upgrade.draining_rate({"OrderRate": default, "DrainingOrderRate": "5000"}, template) == "5000", "under way"
print("test-upgrade-confirm: upgrade.py asks before each prod change set unless --yes, and drains lowered shards")
sys.exit(0)
