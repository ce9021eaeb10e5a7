"""A stand-in Miniconda installer made from the conda bundle: a self-extracting ``.sh``.

The real ``Miniconda3-py311_24.3.0-0-Linux-x86_64.sh`` cannot be downloaded here. This script is
run by the rendered Dockerfile's own lines exactly as Miniconda's is (``bash /tmp/installer.sh -b
-p /opt/conda``, after ``curl`` and ``sha256sum -c``) and lays down a conda base the same way in
outline: a Python under ``PREFIX``, conda's own entry points in ``PREFIX/bin`` and
``PREFIX/condabin``, a ``PREFIX/.condarc``. What differs from Miniconda's (constructor's) installer:

- the base Python is a venv of the image's ``python3`` (3.11), not a bundled CPython, and conda's
  dependencies are pip-installed from the bundle's wheels, not conda packages with ``conda-meta``;
- no ``pkgs/`` cache of the base's packages, no ``conda-meta/history`` of the base, no licence
  prompt (``-b`` skips it in the real one too), no ``-u`` update mode, no ``conda init`` of a shell;
- ``.condarc`` says ``solver: classic``: conda-libmamba-solver is not on PyPI (an explicit lock needs
  no solver, so the Dockerfile's ``conda create --file`` runs the same code either way).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

from tests.conda_bundle import RealConda, bundle_dir

_SCRIPT = """#!/bin/bash
# envkit test stand-in for a Miniconda installer: conda {version} built from its release tag
# (../shared/conda-bundle), self-extracting like constructor's installers: bash THIS -b -p PREFIX
set -euo pipefail
PREFIX="$HOME/miniconda3"
while getopts "bfp:u" opt; do
  case "$opt" in
    b|f|u) ;;
    p) PREFIX="$OPTARG" ;;
    *) echo "usage: $0 [-b] [-f] [-u] [-p PREFIX]" >&2; exit 2 ;;
  esac
done
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
start=$(awk '/^__ENVKIT_PAYLOAD_BELOW__$/ {{ print NR + 1; exit 0 }}' "$0")
tail -n +"$start" "$0" | tar -xzf - -C "$tmp"
echo "PREFIX=$PREFIX"
python3 -m venv "$PREFIX"
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
"$PREFIX/bin/pip" install -q --find-links "$tmp/wheels" -r "$tmp/requirements.txt"
"$PREFIX/bin/pip" install -q --no-deps "$tmp"/wheels/conda-{version}-py3-none-any.whl
HOME="$tmp/home" "$PREFIX/bin/python" -m conda init --install >/dev/null
cp "$tmp/condarc" "$PREFIX/.condarc"
echo "installation finished."
exit 0
__ENVKIT_PAYLOAD_BELOW__
"""
_MTIME = 1_577_836_800


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), _MTIME, 0o644
    tar.addfile(info, io.BytesIO(data))


def standin_installer(conda: RealConda, dest: Path) -> tuple[Path, str]:
    """Write ``dest`` (the stand-in for ``conda``'s Miniconda) and return it with its sha256."""
    bundle = bundle_dir()
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w:gz", compresslevel=1) as tar:
        for wheel in sorted((bundle / "wheels").glob("*.whl")):
            _add(tar, f"wheels/{wheel.name}", wheel.read_bytes())
        built = conda.root.parent / "wheels" / f"conda-{conda.version}-py3-none-any.whl"
        _add(tar, f"wheels/{built.name}", built.read_bytes())
        _add(tar, "requirements.txt", (bundle / "requirements" / f"{conda.version}.txt").read_bytes())
        _add(tar, "condarc", b"solver: classic\nnotify_outdated_conda: false\n")
    data = _SCRIPT.format(version=conda.version).encode() + payload.getvalue()
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    return dest, hashlib.sha256(data).hexdigest()
