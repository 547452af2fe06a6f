"""gates.upgrade asks before each prod change set unless --yes: the
`sam deploy` it runs for a stage whose samconfig.toml sets
confirm_changeset (prod) confirms, and skips that only when told --yes; a
stage that does not ask (dev) is not asked. And lowering the order lists'
shards drains the old ones until a reshard."""

import tomllib

import pytest

from gates import upgrade
from gates.repo import ROOT

SKIPS = "--no-confirm-changeset"


def test_samconfig_asks_in_prod_only() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    assert config["prod"]["deploy"]["parameters"]["confirm_changeset"] is True, "samconfig.toml's prod no longer asks"
    assert config["dev"]["deploy"]["parameters"]["confirm_changeset"] is False


def test_prod_is_deployed_asking_unless_yes() -> None:
    assert SKIPS not in upgrade.deploy_command("prod", "t.yaml", "2", yes=False), "prod deployed without asking"
    assert SKIPS in upgrade.deploy_command("prod", "t.yaml", "2", yes=True)
    assert SKIPS in upgrade.deploy_command("dev", "t.yaml", "2", yes=False)
    assert "DrainingOrderRate=10000" in upgrade.deploy_command("dev", "t.yaml", "done", yes=False, draining="10000")


TEMPLATE = (ROOT / "template.yaml").read_text()
DEFAULT_RATE, RATES = upgrade.capacity(TEMPLATE)


def test_pet_lists_keep_one_shard_at_the_default_rate() -> None:
    assert RATES[DEFAULT_RATE] == (4, 1), RATES[DEFAULT_RATE]  # pet lists: 1 shard at every rate (stock items)


@pytest.mark.parametrize(("parameters", "drained"), [
    ({"DataLayoutStep": "done", "OrderListShards": "32", "PetListShards": "1"}, "10000"),  # 1.1.0's 32 shards
    ({"OrderRate": DEFAULT_RATE, "DrainingOrderRate": "none"}, None),
    ({"OrderRate": "100", "DrainingOrderRate": "none"}, None),  # raising needs none
    ({"OrderRate": "2500"}, "2500"),
    ({"OrderRate": DEFAULT_RATE, "DrainingOrderRate": "5000"}, "5000"),  # under way
])
def test_lowered_shards_are_drained(parameters: dict[str, str], drained: str | None) -> None:
    assert upgrade.draining_rate(parameters, TEMPLATE) == drained
