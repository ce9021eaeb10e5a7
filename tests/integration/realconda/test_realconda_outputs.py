"""Live: what each real conda prints about the environment it installed from envkit's lock reads back.

For each conda: ``conda create -p P --file conda-linux-64.lock``, then every listing of
``outputs.LISTINGS`` (and ``env export`` with ``- defaults``): each reads as the locked packages and
``envkit diff conda-lock.yml OUTPUT`` finds nothing, not even at info. The recorded copies of these
outputs (tests/data/realconda, tests/unit/inventory/test_real_conda_outputs.py) keep this checked
where no conda runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.inventory import read_inventory
from tests.conda_bundle import VERSIONS, RealConda
from tests.integration.realconda.conftest import ExplicitInstalls, Locked
from tests.integration.realconda.outputs import knows_sha256, listings

pytestmark = pytest.mark.conda


@pytest.mark.parametrize("version", VERSIONS)
def test_every_listing_reads_back_as_the_lock(
    condas: dict[str, RealConda], locked: Locked, explicit_installs: ExplicitInstalls, tmp_path: Path,
    version: str, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    conda = condas[version]
    prefix = explicit_installs.prefix(version)  # conda create -y -q -p P --file conda-linux-64.lock
    found = listings(conda, prefix, explicit_installs.scratch(version))
    assert ("list-explicit-sha256.txt" in found) == knows_sha256(version)
    lock = locked.out / "conda-lock.yml"
    wanted = {(p.name, p.version, p.build) for p in read_inventory(lock).packages}
    assert len(wanted) == 3
    host = locked.url.removeprefix("http://")
    for name, text in found.items():
        path = tmp_path / "out" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        inventory = read_inventory(path)
        assert {(p.name, p.version, p.build) for p in inventory.packages} == wanted, name
        assert {p.channel for p in inventory.packages} <= {None, host}, name
        capsys.readouterr()
        code = main(["diff", str(lock), str(path), "--min-severity", "info", "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 0 and out["result"]["findings"] == [], (name, out["result"]["findings"])
