"""``envkit verify``: rebuild an image from the committed lock with ``--no-cache``, compare digests.

Equal image IDs prove the image is what the lock describes. Otherwise the two images are
compared layer by layer and file by file (:mod:`envkit.reproduce.image_diff`), and ``diffoscope``
(Debian package ``diffoscope``), when installed, explains the first differing files.

The image under test may be anyone's: the rebuild is built under ``envkit/NAME:rebuilt`` only
(:attr:`BuildOptions.tag`), so no project tag (``envkit/NAME:latest``, ``envkit/NAME:<digest>``)
and no tag of the verified image ever moves.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from envkit import _proc
from envkit.build.builder import Builder, BuildOptions, image_repo
from envkit.engine.store import ImageStore
from envkit.errors import EnvkitError, UsageError
from envkit.lock.fresh import lock_state
from envkit.render.dockerfile import LOCK_LABEL
from envkit.reproduce.image_diff import EntryDiff, ImageDiff, SavedImage, compare_saved, saved_image
from envkit.spec.load import LoadedSpec, image_dir
from envkit.verify.attestations import check_provenance, check_sbom

__all__ = ["DIFFOSCOPE_FILES", "Diffoscope", "VerifyResult", "verify_image"]

DIFFOSCOPE_FILES = 3  # the first differing files diffoscope explains
_DIFFOSCOPE_MAX = 8 << 20  # bytes of one file handed to diffoscope
_DIFFOSCOPE_LINES = 120
_DIFFOSCOPE_TIMEOUT_S = 120


@dataclass(frozen=True)
class Diffoscope:
    """diffoscope's report on one changed file (its first lines)."""

    path: str
    output: str  # its --text report, the first lines

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "output": self.output}


@dataclass(frozen=True)
class VerifyResult:
    """``envkit verify``: whether the rebuild has the same image id, and what differs if not."""

    name: str
    image: str
    image_id: str
    rebuilt_id: str
    rebuilt_tag: str | None  # set when the rebuild differs (the image keeps its own tags)
    lock_sha256: str | None  # the committed lock's
    image_lock_sha256: str | None  # the image's label
    diff: ImageDiff | None
    diffoscope: tuple[Diffoscope, ...] = ()
    diffoscope_missing: bool = False
    findings: tuple[str, ...] = ()  # the SBOM and provenance against the lock (envkit.verify.attestations)

    @property
    def equal(self) -> bool:
        return self.image_id == self.rebuilt_id

    @property
    def ok(self) -> bool:
        return self.equal and not self.findings

    def to_json(self) -> dict[str, Any]:
        found: dict[str, object] = {k: v for k, v in self.__dict__.items() if k not in ("diff", "diffoscope")}
        found["equal"], found["ok"] = self.equal, self.ok
        found["findings"] = list(self.findings)
        found["diff"] = self.diff.to_json() if self.diff else None
        found["diffoscope"] = [d.to_json() for d in self.diffoscope]
        return found


def verify_image(
    builder: Builder,
    store: ImageStore,
    loaded: LoadedSpec,
    image: str,
    options: BuildOptions,
    *,
    runner: _proc.Runner = _proc.run,
) -> VerifyResult:
    facts = builder.engine.inspect(image)
    if facts is None:
        raise UsageError(f"no image {image} in the engine", hint=f"build it: envkit build {loaded.spec.name}")
    name = loaded.spec.name
    base = builder.engine.inspect(loaded.resolved.runtime_ref)
    findings = [  # before the rebuild, which writes both again
        *check_sbom(image_dir(builder.root, name), facts.labels, lock_state(builder.root, loaded)),
        *check_provenance(builder.root, name, facts.id, facts.labels, base.id if base else None),
    ]
    rebuilt_tag = f"{image_repo(name)}:rebuilt"  # the one tag the rebuild sets: no project tag moves
    built = builder.build(loaded, replace(options, nocache=True, frozen=True, tag=rebuilt_tag))
    lock = built.labels.get(LOCK_LABEL)
    result = VerifyResult(name, image, facts.id, built.image_id, None, lock, facts.labels.get(LOCK_LABEL),
                          None, findings=tuple(findings))  # fmt: skip
    if result.equal:
        return result
    with (
        tempfile.TemporaryDirectory(prefix="envkit-verify-") as tmp,
        saved_image(store, facts.id, Path(tmp)) as left,
        saved_image(store, built.image_id, Path(tmp)) as right,
    ):
        diff = compare_saved(left, right)
        if shutil.which("diffoscope") is None:
            return replace(result, rebuilt_tag=rebuilt_tag, diff=diff, diffoscope_missing=True)
        explained = _diffoscope(left, right, diff.files, Path(tmp), runner)
    return replace(result, rebuilt_tag=rebuilt_tag, diff=diff, diffoscope=explained)


def _diffoscope(
    left: SavedImage, right: SavedImage, files: Sequence[EntryDiff], tmp: Path, runner: _proc.Runner
) -> tuple[Diffoscope, ...]:
    found: list[Diffoscope] = []
    for number, entry in enumerate(e for e in files if e.change == "changed" and "sha256" in e.fields):
        if number >= DIFFOSCOPE_FILES:
            break
        a_pos, _ = left.winner(entry.path)
        b_pos, _ = right.winner(entry.path)
        a = left.file_bytes(a_pos, entry.path, _DIFFOSCOPE_MAX)
        b = right.file_bytes(b_pos, entry.path, _DIFFOSCOPE_MAX)
        if a is None or b is None:
            continue
        name = Path(entry.path).name or "file"
        a_path, b_path = tmp / f"image-{number}" / name, tmp / f"rebuilt-{number}" / name
        for path, data in ((a_path, a), (b_path, b)):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        try:
            run = runner(["diffoscope", "--no-progress", "--text", "-", str(a_path), str(b_path)],
                         check=False, timeout=_DIFFOSCOPE_TIMEOUT_S)  # fmt: skip
            text = "\n".join((run.stdout or run.stderr).splitlines()[:_DIFFOSCOPE_LINES])
        except EnvkitError as e:  # not installed after all, or too slow: the file list stands
            text = f"diffoscope failed: {e.message}"
        found.append(Diffoscope(entry.path, text))
    return tuple(found)
