"""``envkit init``: give a team repository a starter spec, ``envkit.mk`` and CI recipes.

Nothing existing is ever lost: a file that already holds what init would
write is left alone ("unchanged"); one that differs is kept and reported
("kept", with a warning) unless ``force`` is set; the Makefile only ever
gains one ``include envkit.mk`` line at its end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from envkit._atomic import write_bytes_atomic, write_text_atomic
from envkit.catalog import Catalog, load_catalog
from envkit.errors import EnvkitError, UsageError
from envkit.init.install_source import SOURCE_HINT, default_source, pinned_requirement
from envkit.init.starter import (
    StarterChoice,
    choose_starter,
    render_spec,
    substitute,
    template,
    template_tokens,
)
from envkit.spec.models import NAME_RE

__all__ = ["CI_TARGETS", "FileChange", "InitResult", "init_repo"]

FileStatus = Literal["created", "updated", "unchanged", "kept", "overwritten"]
CiKind = Literal["github", "gitlab"]

# Where `--ci` writes each recipe, and the packaged template it comes from.
CI_TARGETS: dict[str, tuple[str, str]] = {
    "github": (".github/workflows/envkit.yml", "github-workflow.yml"),
    "gitlab": (".gitlab-ci-envkit.yml", "gitlab-ci.yml"),
}
MK_NAME = "envkit.mk"
INCLUDE_LINE = f"include {MK_NAME}"
# GNU make reads the first of these that exists.
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_INCLUDE_RE = re.compile(r"^\s*-?s?include\s+(?:.*\s)?(?:\./)?envkit\.mk(?:\s|$)", re.MULTILINE)


@dataclass(frozen=True)
class FileChange:
    """What init did to one file (``path`` is relative to the repository root)."""

    path: str
    status: FileStatus
    note: str = ""

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "status": self.status, "note": self.note}


@dataclass(frozen=True)
class InitResult:
    """What ``envkit init`` wrote (or kept) in the repository."""

    root: Path
    choice: StarterChoice
    files: tuple[FileChange, ...]

    @property
    def warnings(self) -> tuple[str, ...]:
        """One per existing file that differs from what init writes and was kept."""
        return tuple(
            f"{f.path} exists and differs from what init writes; kept it ({f.note})"
            for f in self.files
            if f.status == "kept"
        )

    @property
    def changed(self) -> bool:
        return any(f.status not in ("unchanged", "kept") for f in self.files)

    def to_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "environment": self.choice.to_json(),
            "files": [f.to_json() for f in self.files],
            "changed": self.changed,
        }


def init_repo(
    root: Path,
    framework: str | None = None,
    cuda: str | None = None,
    python: str | None = None,
    *,
    name: str | None = None,
    ci: CiKind | None = None,
    force: bool = False,
    catalog: Catalog | None = None,
    source: str | None = None,
) -> InitResult:
    """Write the starter spec, ``envkit.mk``, the Makefile include and (optionally) a CI recipe.

    ``source``: where the recipes install envkit from (a git URL at a commit, or a wheel URL with
    its sha256; see :mod:`envkit.init.install_source`); default: this installation's own pinned source.
    """
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory", hint="run `envkit init` in your repository's root")
    if name is not None and not NAME_RE.match(name):
        raise UsageError(f"{name!r} is not an environment name", hint="names match [a-z0-9][a-z0-9._-]*")
    if ci is not None and ci not in CI_TARGETS:
        raise UsageError(f"unknown CI kind {ci!r}", hint=f"use one of {', '.join(CI_TARGETS)}")
    choice = choose_starter(catalog or load_catalog(), framework, cuda, python, name)
    tokens = template_tokens(choice)
    found = source or default_source()
    requirement = pinned_requirement(found) if found else None
    if ci is not None and requirement is None:
        raise UsageError(
            "cannot tell where this envkit was installed from, so the CI recipe cannot pin it "
            "(installing `envkit` by name would fetch an unrelated PyPI project)",
            hint=SOURCE_HINT,
        )
    tokens["@@PIP_SPEC@@"] = requirement or ""
    tokens["@@PIP_SPEC_MAKE@@"] = (requirement or "").replace("#", "\\#")  # `#` starts a make comment
    writes = [
        (f"environments/{choice.name}.yaml", render_spec(choice)),
        (MK_NAME, substitute(template("envkit.mk"), tokens)),
    ]
    if ci is not None:
        target, source = CI_TARGETS[ci]
        writes.append((target, substitute(template(source), tokens)))
    try:
        changes = [_write_new(root, relative, text, force=force) for relative, text in writes]
        changes.append(_add_include(root))
    except OSError as e:
        raise EnvkitError(f"cannot write in {root}: {e}", hint="check permissions of the repository") from e
    return InitResult(root=root, choice=choice, files=tuple(changes))


def _write_new(root: Path, relative: str, text: str, *, force: bool) -> FileChange:
    path = root / relative
    if path.is_file():
        current = path.read_text("utf-8", errors="replace")
        if current == text:
            return FileChange(relative, "unchanged")
        if not force:
            return FileChange(relative, "kept", "rerun with --force to replace it")
        write_text_atomic(path, text, within=root)
        return FileChange(relative, "overwritten", "replaced (--force)")
    if path.exists():
        raise UsageError(f"{relative} exists and is not a file", hint="move it away and rerun `envkit init`")
    write_text_atomic(path, text, within=root)
    return FileChange(relative, "created")


def _add_include(root: Path) -> FileChange:
    """Append ``include envkit.mk`` to the Makefile make would read, or create a Makefile."""
    existing = next((root / n for n in _MAKEFILES if (root / n).is_file()), None)
    if existing is None:
        text = f"# Makefile created by `envkit init`: the env-* targets live in {MK_NAME}.\n{INCLUDE_LINE}\n"
        write_text_atomic(root / "Makefile", text, within=root)
        return FileChange("Makefile", "created")
    current = existing.read_text("utf-8", errors="surrogateescape")
    if _INCLUDE_RE.search(current):
        return FileChange(existing.name, "unchanged", f"already includes {MK_NAME}")
    separator = "" if not current or current.endswith("\n") else "\n"
    appended = (
        f"{current}{separator}\n# envkit targets (make env-help), added by `envkit init`\n{INCLUDE_LINE}\n"
    )
    data = appended.encode("utf-8", errors="surrogateescape")
    target = existing.resolve()  # a symlinked Makefile stays a symlink, if it stays in the project
    if not target.is_relative_to(root.resolve()):
        raise UsageError(
            f"{existing.name} is a link to {target}, outside the project: envkit init does not write there",
            hint=f"add `{INCLUDE_LINE}` to it yourself, or replace the link with a file",
        )
    write_bytes_atomic(target, data, mode=target.stat().st_mode & 0o777, within=root)
    return FileChange(existing.name, "updated", f"appended `{INCLUDE_LINE}`")
