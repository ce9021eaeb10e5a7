"""What another user can leave in a shared directory, made for the tests of issue 24."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

OTHER_UID = 54321  # a user that is not this one (the suite runs as root in CI: chown works)


def evil_site(tmp_path: Path) -> tuple[Path, Path]:
    """A directory with a sitecustomize.py that leaves a marker when any Python starts with it on its path."""
    site = tmp_path / "evil-site"
    site.mkdir()
    marker = tmp_path / "PWNED"
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'a').write('attacker code ran\\n')\n")
    return site, marker


def make_foreign(path: Path, how: str) -> None:
    """Turn ``path`` (a file or directory this user made) into what another user could have written."""
    if how == "other user":
        if os.geteuid() != 0:
            pytest.skip("chown to another user needs root")
        os.chown(path, OTHER_UID, OTHER_UID)
    elif how == "group-writable":
        path.chmod(0o775 if path.is_dir() else 0o664)
    elif how == "world-writable":
        path.chmod(0o777 if path.is_dir() else 0o666)
    elif how == "symlink":
        real = path.with_name(f"real-{path.name}")
        path.rename(real)
        path.symlink_to(real)
    elif how == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        raise ValueError(how)
