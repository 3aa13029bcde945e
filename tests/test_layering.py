"""The layering contract in pyproject.toml must name every stage package, in order."""

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_stage_is_in_the_layering_contract():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    stages = sorted(p.name for p in ROOT.glob("stage[1-6]_*") if (p / "__init__.py").exists())
    assert sorted(config["root_packages"]) == stages
    (contract,) = config["contracts"]
    assert contract["layers"] == sorted(stages, reverse=True)
