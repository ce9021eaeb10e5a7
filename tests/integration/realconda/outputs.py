"""What real conda prints about one environment: the listings envkit must read back.

Shared by the live test (tests/integration/realconda/test_realconda_outputs.py) and the recorder
(``python -m tests.integration.realconda.record``) that wrote ``tests/data/realconda/``.
"""

from __future__ import annotations

from pathlib import Path

from tests.conda_bundle import RealConda

# file name -> conda arguments (the prefix is appended); 26.7.1 alone has --sha256
LISTINGS: dict[str, tuple[str, ...]] = {
    "list.txt": ("list",),
    "list.json": ("list", "--json"),
    "list-export.txt": ("list", "--export"),
    "list-explicit-md5.txt": ("list", "--explicit", "--md5"),
    "list-explicit-sha256.txt": ("list", "--explicit", "--sha256"),
    "env-export.yml": ("env", "export"),
}
SHA256_FROM = (24, 9)  # conda PR #14048: `conda list --sha256` and #sha256 fragments


def knows_sha256(version: str) -> bool:
    major, minor = (int(n) for n in version.split(".")[:2])
    return (major, minor) >= SHA256_FROM


def listings(conda: RealConda, prefix: Path, scratch: Path) -> dict[str, str]:
    """Every listing of ``prefix`` this conda prints, plus ``env export`` as Miniconda's would be.

    The bundle's ``.condarc`` says ``channels: []``; a Miniconda configures none, so conda's own
    default ``channels: [defaults]`` applies and 23.5 / 24.3 add ``- defaults`` to ``env export``:
    ``env-export-defaults.yml`` is that export: ``CONDA_ROOT`` (where conda looks for the root
    ``.condarc``) names a folder whose ``.condarc`` has only ``solver: classic``.
    """
    found: dict[str, str] = {}
    for name, args in LISTINGS.items():
        if name == "list-explicit-sha256.txt" and not knows_sha256(conda.version):
            continue
        found[name] = conda.ok([*args, "-p", str(prefix)], scratch)
    root = scratch / "miniconda-like-root"
    root.mkdir(exist_ok=True)
    (root / ".condarc").write_text("solver: classic\nnotify_outdated_conda: false\n")
    env = conda.env(scratch)
    del env["CONDARC"]
    env["CONDA_ROOT"] = str(root)
    found["env-export-defaults.yml"] = conda.ok(["env", "export", "-p", str(prefix)], scratch, env=env)
    return found
