"""A project's layout: specs in ``environments/NAME.yaml``, generated files in ``images/NAME/``.

The one place that knows the folder names, the environment-name pattern and how a name or a path on
the command line becomes a spec file. Standard library and :mod:`envkit.errors` only (a shared module):
every stage may use it.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from envkit.errors import UsageError

__all__ = [
    "IMAGES_DIR",
    "NAME_RE",
    "SPEC_DIR",
    "display_path",
    "find_specs",
    "image_dir",
    "resolve_spec_path",
]

SPEC_DIR = "environments"
IMAGES_DIR = "images"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*\Z")  # an environment's name: its spec file's and its folder's


def display_path(path: Path) -> str:
    """``path`` as a message shows it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def find_specs(root: Path) -> list[Path]:
    """Every ``environments/*.yaml`` of the project, sorted."""
    folder = root / SPEC_DIR
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def resolve_spec_path(name_or_path: str, root: Path) -> Path:
    """``NAME`` -> ``root/environments/NAME.yaml``; a path is taken as it is."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or "/" in name_or_path:
        if not candidate.is_file():
            raise UsageError(f"{name_or_path}: no such spec file", hint="check the path")
        return candidate
    if not NAME_RE.match(name_or_path):
        raise UsageError(
            f"{name_or_path!r} is not an environment name", hint="names match [a-z0-9][a-z0-9._-]*"
        )
    path = root / SPEC_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = [p.stem for p in find_specs(root)]
        close = difflib.get_close_matches(name_or_path, known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(known) or 'none'}"
        raise UsageError(f"{display_path(path)}: no such environment", hint=hint)
    return path


def image_dir(root: Path, name: str) -> Path:
    """Where ``envkit render`` / ``envkit lock`` write an environment's files: ``images/NAME``.

    A ``images`` or ``images/NAME`` that is a link leading out of the project (a cloned repository
    can carry one) is refused: envkit writes nothing outside the project.
    """
    path = root / IMAGES_DIR / name
    if path.is_symlink() or path.parent.is_symlink():
        target, top = path.resolve(), root.resolve()
        if not target.is_relative_to(top):
            raise UsageError(
                f"{path} leads to {target}, outside the project: envkit does not write there",
                hint=f"remove the link (or make it point inside {top}) and rerun",
            )
    return path
