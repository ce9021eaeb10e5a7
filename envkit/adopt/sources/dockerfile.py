"""A Dockerfile -> base image, pins, mirrors; every other instruction listed as not carried.

Read, never run: ``FROM`` (after ``ARG`` defaults) becomes the base image, following stage
names back to an image; ``RUN`` lines are split into commands with :mod:`shlex` (``&&``, ``;``,
``|``) and only ``pip install``, ``pip config set global.index-url``, ``conda/mamba install``
and ``conda create`` are read (their packages become pins, ``-i``/``-c`` mirrors and channels).
OS packages, downloaded scripts run by a shell (``curl ... | sh``), other commands, and
``COPY``/``CMD``/... are each reported with the line they are on. ``$VAR``, ``${VAR}``,
``${VAR:-default}``, ``${VAR:+alt}`` and the shell's ``${VAR%.*}``/``${VAR#v}`` (``%%``, ``##``) are
expanded from ``ARG`` and ``ENV``; what stays unexpanded is reported, not guessed. BuildKit's platform
``ARG``s (``TARGETPLATFORM``, ``TARGETARCH``, ...) declared without a default are the platform the
spec builds, linux/amd64 (said in a note). ``bash -c "..."`` and ``sh -c '...'`` are read as the
commands they run.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from envkit._safe import sensitive_name
from envkit.adopt.evidence import (
    PROXY_VARIABLES,
    PROXY_WHY,
    AdoptError,
    Collected,
    CondaPin,
    PipPin,
    joined_lines,
    shown_item,
)
from envkit.adopt.sources.conda_env import conda_pin
from envkit.adopt.sources.reader import Read, SourceText, bounded
from envkit.adopt.sources.requirements import MAX_TEXT_BYTES, pip_args
from envkit.adopt.sources.shell import Command, commands

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
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+]|%%?|##?)([^{}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
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
_SHELL_C = re.compile(r"^-[a-z]*c[a-z]*\Z")  # bash -c, sh -ec, bash -lc
_MINICONDA_PY = re.compile(r"Miniconda3?-py(3)(\d{1,2})_")  # Miniconda3-py37_4.10.3-Linux-x86_64.sh
_PIP = re.compile(r"^(?:.*/)?pip(?:3(?:\.\d+)?)?\Z")
_PYTHON = re.compile(r"^(?:.*/)?python(?:3(?:\.(\d+))?)?\Z")
_CONDA = re.compile(r"^(?:.*/)?(?:conda|mamba|micromamba)\Z")
_OS_TOOLS = {"apt-get", "apt", "yum", "dnf", "apk", "zypper", "microdnf"}
_SHELLS = {"sh", "bash", "zsh", "dash", "python", "python3"}
_FETCH = {"curl", "wget"}
_TOOLING = {"pip", "setuptools", "wheel"}
_SILENT = {"apt-get update", "apt update", "conda clean", "pip cache", "rm", "mkdir", "cd", "true", "echo"}
MAX_EXPANDED = 64 * 1024  # characters one instruction or value may expand to (real ones: < 2 KB)
MAX_EXPANDED_TOTAL = 8 * 1024 * 1024  # characters all expansions of one Dockerfile may produce


@dataclass
class Budget:
    """What expanding ``$VAR`` may still produce in one Dockerfile: each result and the total are
    bounded, so 40 doubling ``ARG`` lines (2^40 characters) are refused, not allocated."""

    left: int = MAX_EXPANDED_TOTAL
    where: str = ""


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


def expand(text: str, values: Mapping[str, str], budget: Budget | None = None) -> str:
    """``$X``, ``${X}``, ``${X:-d}``, ``${X-d}``, ``${X:+a}``, ``${X+a}``, ``${X%p}``, ``${X%%p}``,
    ``${X#p}``, ``${X##p}`` (``p`` a shell pattern); unknown variables stay.

    :class:`AdoptError` when the result would exceed :data:`MAX_EXPANDED` characters or the
    ``budget`` left (checked while substituting, before anything large is built)."""
    budget = budget if budget is not None else Budget()
    for _ in range(8):  # innermost first: ${A:+==${B}}
        size = len(text)

        def one(match: re.Match[str]) -> str:
            nonlocal size
            value = _one(match, values)
            size += len(value) - len(match[0])
            if size > MAX_EXPANDED or size > budget.left:
                raise _too_long(budget)
            return value

        changed = _VAR.sub(one, text)
        if changed == text:
            break
        text = changed
    budget.left -= len(text)
    if budget.left < 0:
        raise _too_long(budget)
    return text


def _too_long(budget: Budget) -> AdoptError:
    return AdoptError(
        f"{budget.where}: ARG/ENV variables expand to more than {MAX_EXPANDED} characters here "
        f"(or {MAX_EXPANDED_TOTAL} in all): not a Dockerfile envkit reads; nothing was written",
        hint="variables that double each other (ARG B=$A$A) expand without limit: fix those lines",
    )


def _one(match: re.Match[str], values: Mapping[str, str]) -> str:
    name = match[1] or match[4]
    if sensitive_name(name):  # HF_TOKEN, PIP_PASSWORD, ...: a secret never becomes text envkit shows
        return match[0]
    value = values.get(name)
    op, word = match[2], match[3] or ""
    if op and op[0] in "%#":
        return match[0] if value is None else _strip_pattern(value, op, word)
    if op in (":-", "-"):
        return value if value or (op == "-" and value is not None) else word
    if op in (":+", "+"):
        return word if value or (op == "+" and value is not None) else ""
    return value if value is not None else match[0]


def _strip_pattern(value: str, op: str, pattern: str) -> str:
    """The shell's ``${X%p}`` (shortest suffix matching ``p`` removed), ``%%`` (longest), ``#`` (shortest
    prefix), ``##`` (longest): ``${CUDA_VER%.*}`` of 11.8.0 is 11.8."""
    cuts = range(len(value), -1, -1) if op in ("%", "##") else range(len(value) + 1)
    for cut in cuts:
        part = value[cut:] if op[0] == "%" else value[:cut]
        if fnmatch.fnmatchcase(part, pattern):
            return value[:cut] if op[0] == "%" else value[cut:]
    return value


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
    unused = _unused_conda_envs(text)
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
            _run(run, found, where=budget.where, values=values, context=context, budget=budget, unused=unused)
        for number, other, why in stage.others:
            found.lose(f"{label}:{number}", other, why)
    for key, value in chain[-1].env.items():
        _carry_env(key, value, found, label=label)


_FRAMEWORK_PACKAGES = {"torch", "pytorch", "pytorch-gpu", "paddlepaddle", "paddlepaddle-gpu"}
_FRAMEWORK_INDEX = re.compile(r"download\.pytorch\.org/whl|paddlepaddle\.org\.cn")
_FRAMEWORK_WORD = re.compile(r"(?<![\w-])(?:torch|pytorch|paddlepaddle(?:-gpu)?)(?![\w-])", re.I)
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
        _run(run, found, where=budget.where, values=values, context=context, budget=budget, unused=unused)


def _frameworks_of_stage(
    stage: _Stage, found: Collected, *, label: str, values: dict[str, str], budget: Budget
) -> None:
    """A framework installed in a build stage and copied into the final one (``COPY --from``) is
    reported as such: the spec cannot carry it from there (adopt refuses to lose it)."""
    scratch = Collected(found.origin, found.kind)
    for number, run in stage.runs:
        budget.where = f"{label}:{number}"
        _run(run, scratch, where=budget.where, values=values, context=None, budget=budget)
    pins: list[PipPin | CondaPin] = [*scratch.pip, *scratch.conda]
    for pin in pins:
        if pin.name in _FRAMEWORK_PACKAGES:
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


def _run(
    run: str,
    found: Collected,
    *,
    where: str,
    values: dict[str, str],
    context: Path | None,
    budget: Budget,
    unused: frozenset[str] = frozenset(),
) -> None:
    if run.startswith("["):
        try:
            argv = json.loads(run)
        except ValueError:
            argv = None
        if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
            argv = [expand(a, values, budget) for a in argv]
            _command(argv, found, where=where, context=context, unused=unused)
            return
    try:
        parsed, branches, skipped = commands(run, values, lambda word, scope: expand(word, scope, budget))
    except ValueError:
        found.lose(where, f"RUN {run}", "unbalanced quotes: not read")
        return
    for cmd in skipped:
        _other_branch(cmd, found, where=where)
    for branch in branches:
        found.notes.append(
            f"{where}: read the shell branch `{shown_item(branch.read)}` (decided from the ARG/ENV "
            "defaults and the RUN's own assignments); the other branches were not read"
        )
    skip = False
    for index, cmd in enumerate(parsed):
        if skip or not cmd.argv:
            skip = False
            continue
        if cmd.undecided:
            _undecided(cmd, found, where=where)
            continue
        following = parsed[index + 1].argv if index + 1 < len(parsed) else []
        if (
            cmd.separator == "|"
            and cmd.argv[0] in _FETCH
            and following[:1]
            and following[0].rsplit("/", 1)[-1] in _SHELLS
        ):
            found.lose(
                where,
                " ".join([*cmd.argv, "|", *following]),
                "downloads a script and runs it: envkit never runs remote code; not carried",
            )
            skip = True
            continue
        shell = cmd.argv[0].rsplit("/", 1)[-1]
        if shell in {"bash", "sh", "dash", "zsh"} and len(cmd.argv) >= 3 and _SHELL_C.match(cmd.argv[1]):
            _run(
                cmd.argv[2], found, where=where, values=values, context=context, budget=budget, unused=unused
            )
            continue  # bash -c "source activate env && pip install ...": the commands it runs
        _command(cmd.argv, found, where=where, context=context, unused=unused)


def _other_branch(cmd: Command, found: Collected, *, where: str) -> None:
    """A command of a shell branch the ARG/ENV defaults did not choose that installs a framework (or
    from a framework's index): kept as evidence (the branch read may install it from a file unread)."""
    scratch = Collected(found.origin, found.kind)
    try:
        _command(cmd.argv, scratch, where=where, context=None)
    except AdoptError:
        return
    pins: list[PipPin | CondaPin] = [*scratch.pip, *scratch.conda]
    urls = " ".join(u for u, _ in [*scratch.index_urls, *scratch.extra_urls])
    if any(p.name in _FRAMEWORK_PACKAGES for p in pins) or _FRAMEWORK_INDEX.search(urls):
        found.other_branches.append((where, " ".join(cmd.argv)))


def _undecided(cmd: Command, found: Collected, *, where: str) -> None:
    """A command under a shell condition envkit cannot decide: refused when it installs a framework
    (which branch runs decides the environment), reported otherwise."""
    scratch = Collected(found.origin, found.kind)
    try:
        _command(cmd.argv, scratch, where=where, context=None)
    except AdoptError:  # a pin made by a command (`rocm[devel]==$(rocm-sdk version)`) in a branch
        if _FRAMEWORK_WORD.search(" ".join(cmd.argv)):
            raise
        found.lose(
            where,
            " ".join(cmd.argv),
            f"runs only if `{shown_item(cmd.undecided)}`, which envkit cannot decide, and installs what a "
            "command prints: not carried",
        )
        return
    pins: list[PipPin | CondaPin] = [*scratch.pip, *scratch.conda]
    framework = next((p for p in pins if p.name in _FRAMEWORK_PACKAGES), None)
    if framework is not None:
        raise AdoptError(
            f"{where}: {shown_item(framework.spec)} is installed only if `{shown_item(cmd.undecided)}`, "
            "which envkit cannot decide without running the build; nothing was written",
            hint="give the ARG the condition reads a default (or remove the branches not used), "
            "then rerun `envkit init --from`",
        )
    found.lose(
        where,
        " ".join(cmd.argv),
        f"runs only if `{shown_item(cmd.undecided)}`, which envkit cannot decide: not carried",
    )


def _command(
    argv: list[str],
    found: Collected,
    *,
    where: str,
    context: Path | None,
    unused: frozenset[str] = frozenset(),
) -> None:
    while argv and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]) or argv[0] in {"sudo", "exec", "env"}):
        argv = argv[1:]  # DEBIAN_FRONTEND=noninteractive apt-get ..., sudo pip ...
    if not argv:
        return
    _installer_python(argv, found, where=where)
    program = argv[0]
    python = _PYTHON.match(program)
    if (python or _VAR.fullmatch(program)) and argv[1:3] == ["-m", "pip"]:  # ${PY} -m pip: the base image's
        argv = ["pip", *argv[3:]]
        if python and python[1]:
            _python_hint(found, f"3.{python[1]}", where)
    pip = _PIP.match(argv[0].rsplit("/", 1)[-1] if "/" in argv[0] else argv[0])
    if argv[0] == "uv" and argv[1:2] == ["pip"]:
        argv, pip = argv[1:], _PIP.match("pip")
    if pip:
        minor = re.search(r"pip3\.(\d+)$", argv[0])
        if minor:
            _python_hint(found, f"3.{minor[1]}", where)
        _pip(argv[1:], found, where=where, context=context)
    elif _CONDA.match(program):
        if not _creates_unused(argv[1:], found, where=where, unused=unused):
            _conda(argv[1:], found, where=where)
    elif program in _OS_TOOLS:
        _os_packages(program, argv, found, where=where)
    elif " ".join(argv[:2]) in _SILENT or program in _SILENT:
        return
    else:
        _other(argv, python, found, where=where)


def _installer_python(argv: list[str], found: Collected, *, where: str) -> None:
    """The Python of the conda a command downloads or runs: ``Miniconda3-py37_4.10.3-Linux-x86_64.sh``
    installs Python 3.7 as the base environment."""
    installer = next((m for a in argv if (m := _MINICONDA_PY.search(a))), None)
    if installer:
        _python_hint(found, f"{installer[1]}.{installer[2]}", where)


def _os_packages(program: str, argv: list[str], found: Collected, *, where: str) -> None:
    packages = [a for a in argv[2:] if not a.startswith("-")] if argv[1:2] in (["install"], ["add"]) else []
    _os_python(packages, found, where)
    if packages:
        found.lose(
            where,
            f"{program} install {' '.join(packages)}",
            "OS packages: not carried (envkit's base images bring what the frameworks load; "
            "others belong in a base image)",
        )


def _other(argv: list[str], python: re.Match[str] | None, found: Collected, *, where: str) -> None:
    """A command that installs no pin: the Python it states (``python3.7 get-pip.py``,
    ``update-alternatives``), an environment installed from a file envkit did not read
    (``uv sync``, ``poetry install``), or a shell command; each is reported."""
    command = " ".join(argv)
    if python and argv[1:2] and argv[1].endswith("get-pip.py"):
        if python[1]:
            _python_hint(found, f"3.{python[1]}", where)
        return
    chosen = next((m for a in argv if (m := re.search(r"/python3\.(\d+)\Z", a))), None)
    if argv[0] == "update-alternatives" and "--install" in argv and chosen:
        _python_hint(found, f"3.{chosen[1]}", where)
        return
    if " ".join(argv[:2]) in _ENV_FROM_FILE or _FRAMEWORK_SCRIPT.search(command):
        found.unread.append((where, command))
        found.lose(where, command, "installs the environment from a file envkit did not read: not carried")
        return
    why = "a shell command: envkit builds from the spec only; not carried"
    if _CONDA_INSTALLER.search(command) and _HAS_CONDA.search(found.base_image or ""):
        why = f"installs a second conda on {found.base_image}, which has one: not carried"
    found.lose(where, command, why)


# a script run to install a framework: python3 /tmp/install-torch.py --torch=..., bash install_paddle.sh
_FRAMEWORK_SCRIPT = re.compile(
    r"^(?:\S*/)?(?:python3?(?:\.\d+)?|bash|sh)\s+\S*(?:torch|paddle)\S*\.(?:py|sh)\b|--(?:torch|paddle)=",
    re.I,
)
_ENV_FROM_FILE = {"uv sync", "poetry install", "pipenv install", "pipenv sync", "pdm install", "pdm sync"}
_CONDA_INSTALLER = re.compile(r"(?:Mini|Ana)conda3?|Miniforge3?|Mambaforge|micromamba", re.I)
_HAS_CONDA = re.compile(r"(?:^|/)(?:pytorch/pytorch|continuumio/|condaforge/|mambaorg/)")
_OS_PYTHON = re.compile(r"^python3\.(\d+)(?:-(?:dev|venv|distutils|full|minimal))?\Z")
_DISTRO_PYTHON_PACKAGES = {"python3", "python3-pip", "python3-dev", "python3-venv", "python-is-python3"}


def _os_python(packages: list[str], found: Collected, where: str) -> None:
    """``apt-get install python3.10`` states Python 3.10; ``python3``/``python-is-python3`` the OS's own."""
    versioned = next((m for p in packages if (m := _OS_PYTHON.match(p))), None)
    if versioned:
        _python_hint(found, f"3.{versioned[1]}", where)
    elif _DISTRO_PYTHON_PACKAGES & set(packages) and not found.distro_python:
        found.distro_python = where


def _python_hint(found: Collected, version: str, where: str) -> None:
    if found.python is None:
        found.python, found.python_where = version, where


def _pip(args: list[str], found: Collected, *, where: str, context: Path | None) -> None:
    while args and args[0].startswith("-") and args[0] not in {"--version", "-V"}:
        args = args[1:]  # pip's general options before the command: pip --no-cache-dir install ...
    if not args:
        return
    sub, rest = args[0], args[1:]
    if sub == "install":
        before = len(found.pip)
        pip_args(rest, found, where=where, base=context)
        tooling = [p for p in found.pip[before:] if p.name in _TOOLING]
        for pin in tooling:
            found.pip.remove(pin)
            found.lose(where, pin.spec, "installer tooling: the environment envkit builds brings its own pip")
    elif sub == "config" and rest[:2] == ["set", "global.index-url"] and len(rest) >= 3:
        found.index_urls.append((rest[2], where))
    elif sub in {"cache", "list", "freeze", "check", "show", "--version", "-V"}:
        return
    else:
        found.lose(where, f"pip {' '.join(args)}", f"pip {sub}: not carried")


_CONDA_CREATE = re.compile(r"\b(?:conda|mamba|micromamba)\s+create\b[^\n]*?\s(?:-n|--name)[\s=]+([\w.-]+)")


def _unused_conda_envs(text: str) -> frozenset[str]:
    """The conda environments ``conda create -n NAME`` makes that nothing else in the Dockerfile names
    (no ``conda activate``/``conda run -n``/``SHELL``, no ``/envs/NAME/bin`` on PATH): what is
    installed into them is not the environment the image runs."""
    names = {m[1] for m in _CONDA_CREATE.finditer(text)}
    return frozenset(n for n in names if len(re.findall(rf"(?<![\w.-]){re.escape(n)}(?![\w.-])", text)) == 1)


def _creates_unused(args: list[str], found: Collected, *, where: str, unused: frozenset[str]) -> bool:
    """``conda create -n NAME ...`` of an environment nothing else uses: reported, its pins not read."""
    if args[:1] != ["create"]:
        return False
    name = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in {"-n", "--name"}), None)
    if name not in unused:
        return False
    found.lose(
        where,
        f"conda {' '.join(args)}",
        f"creates the conda environment {name}, which nothing else in the Dockerfile uses (not "
        "activated, not run, not on PATH): not the image's environment; not carried",
    )
    return True


def _conda(args: list[str], found: Collected, *, where: str) -> None:
    if not args:
        return
    sub, rest = args[0], args[1:]
    if sub in {"clean", "info", "list", "init", "activate", "deactivate", "shell"}:
        return
    if sub == "env" and rest[:1] in (["create"], ["update"]):
        found.unread.append((where, f"conda {' '.join(args)}"))
        found.lose(
            where,
            f"conda {' '.join(args)}",
            "installs the environment from a file envkit did not read: not carried",
        )
        return
    if sub in {"env"} or sub not in {"install", "create"}:
        found.lose(where, f"conda {' '.join(args)}", f"conda {sub}: not carried")
        return
    channels: list[str] = []
    packages: list[str] = []
    index = 0
    while index < len(rest):
        token = rest[index]
        index += 1
        if token in {"-c", "--channel"} and index < len(rest):
            channels.append(rest[index])
            index += 1
        elif token.startswith("--channel="):
            channels.append(token.split("=", 1)[1])
        elif token in {"-n", "--name", "-p", "--prefix"}:
            index += 1
        elif token in {"-f", "--file"} and index < len(rest):
            found.unread.append((where, f"conda {sub} --file {rest[index]}"))
            found.lose(where, f"conda {sub} --file {rest[index]}", "reads a file inside the image: not read")
            index += 1
        elif token.startswith("-"):
            continue  # -y, -q, --override-channels, --strict-channel-priority
        else:
            packages.append(token)
    found.channels.extend(channels)
    for package in packages:
        conda_pin(package, where, found)
