"""A Dockerfile -> base image, pins, mirrors; every other instruction listed as not carried.

Read, never run: ``FROM`` (after ``ARG`` defaults) becomes the base image, following stage
names back to an image; ``RUN`` lines are read by :mod:`~envkit.adopt.sources.dockerfile_run`
(``pip``/``conda`` installs become pins, ``-i``/``-c`` mirrors and channels; OS packages, scripts
and other commands are reported), and ``COPY``/``CMD``/... are each reported with the line they are
on. ``$VAR`` and the shell's forms of it are expanded from ``ARG`` and ``ENV``
(:mod:`~envkit.adopt.sources.dockerfile_expand`); what stays unexpanded is reported, not guessed.
BuildKit's platform ``ARG``s (``TARGETPLATFORM``, ``TARGETARCH``, ...) declared without a default
are the platform the spec builds, linux/amd64 (said in a note).
"""

from __future__ import annotations

import re
import shlex
from collections import ChainMap
from dataclasses import dataclass, field
from pathlib import Path

from envkit.adopt.evidence import PROXY_VARIABLES, PROXY_WHY, Collected, CondaPin, PipPin, joined_lines
from envkit.adopt.sources.dockerfile_expand import Budget, expand
from envkit.adopt.sources.dockerfile_run import FRAMEWORK_PACKAGES, read_run, unused_conda_envs
from envkit.adopt.sources.reader import Read, SourceText, bounded
from envkit.adopt.sources.requirements import MAX_TEXT_BYTES

__all__ = ["looks_like_dockerfile", "read_dockerfile"]

_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)(?:\s+(.*))?\Z", re.DOTALL)
_KNOWN = {
    "FROM",
    "ARG",
    "ENV",
    "RUN",
    "COPY",
    "ADD",
    "WORKDIR",
    "EXPOSE",
    "CMD",
    "ENTRYPOINT",
    "USER",
    "LABEL",
    "HEALTHCHECK",
    "VOLUME",
    "SHELL",
    "ONBUILD",
    "STOPSIGNAL",
    "MAINTAINER",
}
# BuildKit's automatic platform ARGs (docs.docker.com/build/building/variables/#pre-defined-build-arguments
# "Automatic platform ARGs in the global scope"): set by the builder when declared without a default.
# envkit builds linux/amd64 images (a spec with no platform), so a Dockerfile's branches are read for it.
PLATFORM_ARGS = {
    "TARGETPLATFORM": "linux/amd64",
    "TARGETOS": "linux",
    "TARGETARCH": "amd64",
    "TARGETVARIANT": "",
    "BUILDPLATFORM": "linux/amd64",
    "BUILDOS": "linux",
    "BUILDARCH": "amd64",
    "BUILDVARIANT": "",
}


@dataclass
class _Stage:
    image: str
    name: str | None
    line: int
    runs: list[tuple[int, str]] = field(default_factory=list)
    others: list[tuple[int, str, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def looks_like_dockerfile(path: Path, text: str) -> bool:
    name = path.name.lower()
    if name.startswith(("dockerfile", "containerfile")) or name.endswith((".dockerfile", ".containerfile")):
        return True
    for _, instruction in joined_lines(text):
        return instruction.split(None, 1)[0].upper() in {"FROM", "ARG"} and " " in instruction
    return False


def read_dockerfile(source: SourceText) -> Read:
    """A Dockerfile: what its stages install on the base image (no inventory: it is no listing)."""
    bounded(source, MAX_TEXT_BYTES)
    found = Collected(source.label, "dockerfile")
    _collect(source.text, found, label=source.label, context=source.path.parent)
    return found, None


def _collect(text: str, found: Collected, *, label: str, context: Path | None = None) -> None:
    """``context``: the build context (the Dockerfile's folder), where relative ``-r`` files are read."""
    budget = Budget()
    stages, args = _stages(text, found, label=label, budget=budget)
    if not stages:
        return
    unused = unused_conda_envs(text)
    chain = _chain(stages)
    found.base_image = chain[0].image
    copied_envs = {stage.name: copy for stage in stages if (copy := _copied_environment(stage, chain))}
    for stage in stages:
        if stage not in chain and stage.name in copied_envs:
            found.notes.append(
                f"{label}:{copied_envs[stage.name]}: the Python environment built in stage {stage.name} "
                "is copied into the final image: its installs are read as the final image's"
            )
            _read_stage(
                stage,
                found,
                label=label,
                values={**args, **stage.env},
                context=context,
                budget=budget,
                unused=unused,
            )
        elif stage not in chain:
            found.lose(
                f"{label}:{stage.line}",
                f"FROM {stage.image} AS {stage.name}",
                "a build stage: what it builds is copied in by COPY --from, not carried",
            )
            _frameworks_of_stage(stage, found, label=label, values={**args, **stage.env}, budget=budget)
    for stage in chain:
        values = {**args, **stage.env}
        for number, run in stage.runs:
            budget.where = f"{label}:{number}"
            read_run(
                run, found, where=budget.where, values=values, context=context, budget=budget, unused=unused
            )
        for number, other, why in stage.others:
            found.lose(f"{label}:{number}", other, why)
    for key, value in chain[-1].env.items():
        _carry_env(key, value, found, label=label)


_COPY_FROM = re.compile(
    r"^COPY\s+(?:--\S+\s+)*?--from=(?P<stage>\S+)\s+(?:--\S+\s+)*(?P<src>/\S+)\s+\S+[ \t]*\Z"
)
_ENV_DIR = re.compile(r"/(?:\.?venv|env|conda|miniconda3|site-packages)(?:/|$)")


def _copied_environment(stage: _Stage, chain: list[_Stage]) -> int | None:
    """The line of a ``COPY --from=STAGE /opt/venv ...`` in the final image's stages that copies the
    Python environment STAGE installed into (a folder whose ``bin`` is on that stage's PATH, or a
    venv/conda/site-packages folder), or None: then only the application's files come from it."""
    if stage.name is None:
        return None
    on_path = {
        part.removesuffix("/bin").rstrip("/")
        for part in stage.env.get("PATH", "").split(":")
        if part.endswith("/bin")
    }
    for chained in chain:
        for number, other, _ in chained.others:
            match = _COPY_FROM.match(other)
            if match and match["stage"] == stage.name:
                src = match["src"].rstrip("/")
                if src in on_path or _ENV_DIR.search(src + "/"):
                    return number
    return None


def _read_stage(
    stage: _Stage,
    found: Collected,
    *,
    label: str,
    values: dict[str, str],
    context: Path | None,
    budget: Budget,
    unused: frozenset[str],
) -> None:
    for number, run in stage.runs:
        budget.where = f"{label}:{number}"
        read_run(run, found, where=budget.where, values=values, context=context, budget=budget, unused=unused)


def _frameworks_of_stage(
    stage: _Stage, found: Collected, *, label: str, values: dict[str, str], budget: Budget
) -> None:
    """A framework installed in a build stage and copied into the final one (``COPY --from``) is
    reported as such: the spec cannot carry it from there (adopt refuses to lose it)."""
    scratch = Collected(found.origin, found.kind)
    for number, run in stage.runs:
        budget.where = f"{label}:{number}"
        read_run(run, scratch, where=budget.where, values=values, context=None, budget=budget)
    pins: list[PipPin | CondaPin] = [*scratch.pip, *scratch.conda]
    for pin in pins:
        if pin.name in FRAMEWORK_PACKAGES:
            found.lose(
                pin.where,
                pin.spec,
                f"installed in the build stage {stage.name} and copied in with COPY --from: not carried",
            )


def _stages(
    text: str, found: Collected, *, label: str, budget: Budget
) -> tuple[list[_Stage], dict[str, str]]:
    """The stages (FROM, RUN, ENV, other instructions) and the global ARG defaults."""
    stages: list[_Stage] = []
    args: dict[str, str] = {}
    for number, instruction in joined_lines(text):
        match = _INSTRUCTION.match(instruction)
        if not match:
            found.lose(f"{label}:{number}", instruction, "not a Dockerfile instruction")
            continue
        keyword, rest = match[1].upper(), (match[2] or "").strip()
        values = ChainMap(stages[-1].env if stages else {}, args)  # no copy per line
        budget.where = f"{label}:{number}"
        if keyword == "ARG":
            name, _, default = rest.partition("=")
            name = name.strip()
            if not default and name in PLATFORM_ARGS and name not in args:
                found.notes.append(
                    f"{label}:{number}: ARG {name} is set by the builder to the platform built: read as "
                    f"{PLATFORM_ARGS[name] or '(empty)'} (envkit builds linux/amd64)"
                )
                args[name] = PLATFORM_ARGS[name]
                continue
            args[name] = (
                expand(default.strip().strip("\"'"), values, budget) if default else args.get(name, "")
            )
        elif keyword == "FROM":
            parts = [p for p in rest.split() if not p.startswith("--platform")]
            image = expand(parts[0], values, budget) if parts else ""
            image = image or (
                parts[0] if parts else ""
            )  # FROM ${BASE} of an ARG without a default: kept, reported
            alias = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            stages.append(_Stage(image, alias, number))
        elif not stages:
            found.lose(f"{label}:{number}", instruction, "before the first FROM")
        elif keyword == "ENV":
            for key, value in _env_pairs(rest):
                stages[-1].env[key] = expand(value, values, budget)
        elif keyword == "RUN":
            stages[-1].runs.append((number, rest))
        else:
            why = _OTHER_WHY.get(keyword, "not a Dockerfile instruction envkit knows")
            stages[-1].others.append((number, f"{keyword} {rest}", why))
    return stages, args


_OTHER_WHY = {
    "COPY": "the application's files: keep this in your Dockerfile, FROM the image envkit builds",
    "ADD": "the application's files: keep this in your Dockerfile, FROM the image envkit builds",
    "WORKDIR": "part of the application image, not of the environment",
    "EXPOSE": "part of the application image, not of the environment",
    "CMD": "part of the application image, not of the environment",
    "ENTRYPOINT": "part of the application image, not of the environment",
    "USER": "part of the application image, not of the environment",
    "LABEL": "envkit writes its own labels (spec, lock digest)",
    "HEALTHCHECK": "part of the application image, not of the environment",
    "VOLUME": "part of the application image, not of the environment",
    "SHELL": "envkit's Dockerfile chooses its own shell",
    "ONBUILD": "part of the application image, not of the environment",
    "STOPSIGNAL": "part of the application image, not of the environment",
    "MAINTAINER": "envkit writes its own labels (spec, lock digest)",
}


def _chain(stages: list[_Stage]) -> list[_Stage]:
    """The final stage and the stages it is built FROM, root first."""
    by_name = {s.name: s for s in stages if s.name}
    chain = [stages[-1]]
    while chain[0].image in by_name and by_name[chain[0].image] not in chain:
        chain.insert(0, by_name[chain[0].image])
    return chain


def _env_pairs(rest: str) -> list[tuple[str, str]]:
    try:
        tokens = shlex.split(rest, posix=True)
    except ValueError:
        return []
    if tokens and "=" not in tokens[0]:
        return [(tokens[0], " ".join(tokens[1:]))]  # legacy `ENV KEY value with spaces`
    return [(k, v) for k, _, v in (t.partition("=") for t in tokens)]


def _carry_env(key: str, value: str, found: Collected, *, label: str) -> None:
    if key.lower() in PROXY_VARIABLES:
        found.lose(label, f"ENV {key}", PROXY_WHY)
    elif key in {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "HOME"} or "$" in value or "\n" in value:
        found.lose(
            label, f"ENV {key}={value}", "names paths of that image (or an unexpanded variable): not carried"
        )
    elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) and value.isprintable():
        found.env[key] = value
    else:
        found.lose(label, f"ENV {key}", "not a variable a spec can carry")
