"""``envkit guard replay DUMP --image NAME``: the incident's step replayed inside a container image.

The dump is checked here first (hashes, headers: a changed batch is refused before any container
starts), then :mod:`envkit.incident.image_side` runs in the image through the
:class:`~envkit.engine.protocol.ContainerEngine`: the dump directory, envkit's source and the
entry's code directory mounted read-only, no network, as the image's own non-root user. Its one
JSON line is parsed strictly; the verdict compares the in-image replays with the recorded outcome
and, when they differ, ranks the causes from the recorded and the in-image fingerprints.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import envkit
from envkit import payload
from envkit._io import load_json_bounded
from envkit.errors import GuardError
from envkit.guard.dump import Dump, copy_dump, read_dump
from envkit.guard.localize import Replay
from envkit.incident.image_side import KIND, SCHEMA
from envkit.incident.replay import ReplayVerdict, judge, side_report

if TYPE_CHECKING:
    from envkit.engine.protocol import ContainerEngine

__all__ = ["judge_side", "parse_side", "replay_in_image", "stage_dump"]

SOURCE = Path(envkit.__file__).resolve().parent  # the envkit package, mounted as /opt/envkit-src/envkit
CONTAINER_SRC = "/opt/envkit-src"
CONTAINER_DUMP = "/opt/envkit-dump"
CONTAINER_CODE = "/opt/envkit-code"
MAX_DEPTH = 32
REPLAY_TIMEOUT_S = 1800  # the probe's limit: a replay runs a training step again
SIDE = ("-m", "envkit.incident.image_side")  # launched by envkit.payload.run, from the code directory


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-10:])


def mounts_for(dump: Path, code: Path) -> list[tuple[str, str]]:
    """The dump, envkit's source and the code directory: (host, container), mounted read-only."""
    return [
        (str(dump.resolve()), CONTAINER_DUMP),
        (str(SOURCE), f"{CONTAINER_SRC}/envkit"),
        (str(code.resolve()), CONTAINER_CODE),
    ]


def replay_in_image(
    engine: ContainerEngine, image: str, path: Path, entry: str, *, code: Path | None = None
) -> ReplayVerdict:
    """Replay the dump at ``path`` in ``image`` with ``entry`` importable from ``code`` (default: cwd)."""
    dump = read_dump(path)
    info = engine.inspect(image)
    if info is None:
        raise GuardError(f"image {image} does not exist", hint=f"build it first: `envkit build {image}`")
    user = info.user.split(":")[0]
    if user in ("", "0", "root"):
        raise GuardError(
            f"image {image} runs as root: envkit replays a dump only as an image's non-root user",
            hint="give the image a USER (envkit build images have one)",
        )
    code_dir = _readable_code(code or Path.cwd(), user)
    # the image's user reads the copy: owner-only when it is this uid, else o+r inside the 0700 temp dir
    mode = None if user.isdigit() and int(user) == os.getuid() else 0o644
    with tempfile.TemporaryDirectory(prefix="envkit-replay-") as tmp:
        staged = stage_dump(dump, Path(tmp) / "dump", mode=mode)
        result = _run(engine, image, staged, entry, code_dir)
    return _judged(dump, image, info.id, result)


def _readable_code(code: Path, user: str) -> Path:
    """The code directory, when the image's user can list and read it (else the import fails in there)."""
    where = code.resolve()
    st = where.stat()
    owner = user.isdigit() and int(user) == st.st_uid
    if not owner and st.st_mode & (stat.S_IROTH | stat.S_IXOTH) != stat.S_IROTH | stat.S_IXOTH:
        raise GuardError(
            f"{where}: the image's user ({user}) cannot read this directory (mode "
            f"{stat.S_IMODE(st.st_mode):o}), and --entry is imported from it",
            hint=f"chmod o+rx {where}, or run the replay from the training code's readable directory",
        )
    return where


def stage_dump(dump: Dump, target: Path, *, mode: int | None = None) -> Path:
    """The checked dump copied to the new ``target`` (a fleet store, an image's mount): the manifest's own
    regular files only, never through a link, hashed as copied, with the dump's modes (0600) unless
    ``mode`` says otherwise (:func:`envkit.guard.dump.copy_dump`)."""
    return copy_dump(dump, target, mode=mode).path


def _run(engine: ContainerEngine, image: str, staged: Path, entry: str, code: Path) -> payload.Ran:
    from envkit.engine.in_image import InImage

    env = {"PYTHONPATH": CONTAINER_SRC, "PYTHONDONTWRITEBYTECODE": "1"}
    # a replay runs the training step again: the probe's time limit, not a report's few minutes
    where = InImage(engine, image, env=env, network=False, timeout_s=REPLAY_TIMEOUT_S)
    return payload.run(where, SIDE, [CONTAINER_DUMP, entry], mounts_for(staged, code), cwd=CONTAINER_CODE)


def _judged(dump: Dump, image: str, image_id: str, result: payload.Ran) -> ReplayVerdict:
    where = f"in {image}"
    if result.code != 0:
        raise GuardError(
            f"the replay failed {where} (exit {result.code}):\n{_tail(result.stderr)}",
            hint="does the image have python3 and the dump's framework? is --entry importable there?",
        )
    lines = result.stdout.strip().splitlines()
    try:
        document = load_json_bounded(lines[-1] if lines else "", MAX_DEPTH)
    except ValueError as e:
        raise _fail(where, f"no result ({e})") from e
    return judge_side(dump, document, where, f"replayed {where} ({image_id[:19]})")


def judge_side(dump: Dump, document: object, where: str, note: str) -> ReplayVerdict:
    """The verdict from a replaying side's JSON (:mod:`envkit.incident.image_side`), ``note`` added."""
    side = parse_side(document, where)
    fingerprint, framework_info = side["fingerprint"], side["info"]

    def here(framework: str) -> Any:
        env_json = {"fingerprint": fingerprint, "framework": framework, "info": framework_info}
        return side_report(env_json, f"the replay {where}")

    verdict = judge(dump, side["runs"], here, where)
    return replace(verdict, notes=[*verdict.notes, note])


def _fail(where: str, what: str) -> GuardError:
    return GuardError(
        f"the replay {where} printed {what}", hint="the image's envkit side and this envkit disagree; rerun"
    )


def _hex(value: Any, where: str, field: str) -> float:
    if not isinstance(value, str):
        raise _fail(where, f"a {field} that is not a hex float")
    try:
        return float.fromhex(value)
    except ValueError as e:
        raise _fail(where, f"a {field} {value[:40]!r} that is not a hex float") from e


def parse_side(data: object, where: str) -> dict[str, Any]:
    """A replaying side's JSON, strictly: kind, schema, two replays of hex floats, objects for the rest."""
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("schema") != SCHEMA:
        raise _fail(where, f"something that is not a {KIND} schema {SCHEMA}")
    replays = data.get("replays")
    if not (isinstance(replays, list) and len(replays) == 2 and all(isinstance(r, dict) for r in replays)):
        raise _fail(where, "replays that are not two objects")
    for name in ("localization", "fingerprint", "info"):
        if not isinstance(data.get(name), dict):
            raise _fail(where, f"a {name} that is not an object")
    localization: dict[str, object] = data["localization"]
    runs: list[Replay] = []
    for r in replays:
        error = r.get("error")
        if not (error is None or isinstance(error, str)):
            raise _fail(where, "an error that is not a string")
        loss, norm = _hex(r.get("loss"), where, "loss"), _hex(r.get("grad_norm"), where, "grad_norm")
        runs.append(Replay(loss, norm, localization if not runs else {}, error))
    return {"runs": runs, "fingerprint": data["fingerprint"], "info": data["info"]}
