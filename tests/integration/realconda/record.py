"""Record what real conda prints into ``tests/data/realconda/`` (run by hand; the files are committed).

    PYTHONPATH=. .venv/bin/python -m tests.integration.realconda.record tests/data/realconda

The same world as the tests (conftest.py): a channel of real archives served over http on
127.0.0.1, ``envkit lock`` of a spec against it, then for each conda of the bundle
``conda create -p P --file conda-linux-64.lock`` and every listing of ``outputs.LISTINGS``.
``lock/`` keeps the lock those installs came from (``envkit diff lock/conda-lock.yml OUTPUT``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.offline.testing import make_real_channel
from tests.conda_bundle import installed_condas
from tests.integration.realconda.conftest import NAME, channel_packages, serving
from tests.integration.realconda.outputs import listings


def record(dest: Path) -> None:
    condas = installed_condas()
    with tempfile.TemporaryDirectory(prefix="envkit-record-") as tmp:
        root = Path(tmp)
        make_real_channel(root / "channel", channel_packages())
        with serving(root / "channel") as server:
            (root / "environments").mkdir()
            (root / "environments" / f"{NAME}.yaml").write_text(
                f'name: {NAME}\npython: "3.11"\ncuda: cpu\nchannels: ["{server.url}"]\n'
                "conda:\n  - tinylib 1.2.*\n  - pip\nplatforms: [linux-64]\n"
            )
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("ENVKIT_ROOT", str(root))
                assert main(["lock", NAME]) == 0
            for old in ("lock", *condas):  # README.md stays
                shutil.rmtree(dest / old, ignore_errors=True)
            (dest / "lock").mkdir(parents=True)
            for name in ("conda-lock.yml", "conda-linux-64.lock", "environment.yml"):
                shutil.copy(root / "images" / NAME / name, dest / "lock" / name)
            for version, conda in condas.items():
                scratch = root / f"conda-{version}"
                prefix = scratch / "env"
                lock = root / "images" / NAME / "conda-linux-64.lock"
                conda.ok(["create", "-y", "-q", "-p", str(prefix), "--file", str(lock)], scratch)
                (dest / version).mkdir()
                for name, text in listings(conda, prefix, scratch).items():
                    (dest / version / name).write_text(text)
            port = server.server_address[1]
        facts = {
            "condas": sorted(condas),
            "python": sys.version.split()[0],
            "channel": server.url,
            "port": port,
        }
        (dest / "recorded.json").write_text(json.dumps(facts, indent=1) + "\n")


if __name__ == "__main__":
    record(Path(sys.argv[1]))
