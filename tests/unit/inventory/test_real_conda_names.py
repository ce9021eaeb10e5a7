"""What real conda writes where envkit reads a channel name, and conda-lock's CONDA_ROOT leak.

Found by running real conda (tests/integration/realconda): ``conda list`` prints the URL of a
channel it has no name for (``http://127.0.0.1:PORT``); ``conda-meta/*.json`` holds
``"channel": "<channel URL>/<subdir>"`` (py-rattler writes ``<channel URL>``); importing
conda-lock's vendored conda set ``CONDA_ROOT`` for every conda envkit starts afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from envkit.inventory._collect import channel_from_url
from envkit.inventory.snapshot import _record


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000"),  # conda list's channel column
        ("http://127.0.0.1:8000/", "127.0.0.1:8000"),
        ("http://127.0.0.1:8000/linux-64/python-3.11.7-h0.tar.bz2", "127.0.0.1:8000"),  # a lock's URL
        ("http://127.0.0.1:8000/channel/noarch", "127.0.0.1:8000/channel"),  # conda-meta's channel
        ("https://conda.anaconda.org/conda-forge/linux-64", "conda-forge"),
        ("https://conda.anaconda.org/t/tk-0123/conda-forge/noarch/x-1-0.conda", "conda-forge"),
        ("https://repo.anaconda.com/pkgs/main/linux-64", "pkgs/main"),
        ("conda-forge", "conda-forge"),
        ("pkgs/main", "pkgs/main"),
    ],
)
def test_channel_names(url: str, name: str) -> None:
    assert channel_from_url(url) == name


@pytest.mark.parametrize(
    ("written", "name"),
    [
        ("http://127.0.0.1:8000/channel/linux-64", "127.0.0.1:8000/channel"),  # real conda
        ("http://127.0.0.1:8000/channel", "127.0.0.1:8000/channel"),  # py-rattler
        ("https://conda.anaconda.org/conda-forge/noarch", "conda-forge"),
        ("https://user:secret@mirror.example/conda-forge/linux-64", "***@mirror.example/conda-forge"),
        ("conda-forge", "conda-forge"),  # conda list --json on the host
    ],
)
def test_snapshot_names_the_conda_meta_channel_as_the_lock_does(written: str, name: str) -> None:
    record = _record({"name": "x", "channel": written}, ("name", "channel"))
    assert record == {"name": "x", "channel": name}
    assert "secret" not in str(record)


def test_importing_the_lock_reader_leaves_conda_root_alone() -> None:
    code = "import os, envkit.lock.lockfile, envkit.inventory.read; print(os.environ.get('CONDA_ROOT'))"
    env = {k: v for k, v in os.environ.items() if k != "CONDA_ROOT"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "None"
