"""A Dockerfile's ``RUN`` lines, read as a shell would run them, without running them: :func:`read_run`.

Each ``RUN`` is split into commands (:mod:`envkit.adopt.sources.shell`: ``&&``, ``;``, ``|``, the
branches of ``if``, assignments); ``pip install``, ``pip config set global.index-url``,
``conda/mamba install`` and ``conda create`` are read (their packages become pins, ``-i``/``-c``
mirrors and channels); OS packages, downloaded scripts run by a shell, a branch that cannot run,
and other commands are reported with the line they are on. ``bash -c "..."`` and ``sh -c '...'``
are read as the commands they run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from envkit.adopt.evidence import AdoptError, Collected, CondaPin, PipPin, shown_item
from envkit.adopt.sources.conda_env import conda_pin
from envkit.adopt.sources.dockerfile_expand import VAR, Budget, expand
from envkit.adopt.sources.requirements import pip_args
from envkit.adopt.sources.shell import Command, commands

__all__ = ["FRAMEWORK_PACKAGES", "read_run", "unused_conda_envs"]

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
FRAMEWORK_PACKAGES = {"torch", "pytorch", "pytorch-gpu", "paddlepaddle", "paddlepaddle-gpu"}
_FRAMEWORK_INDEX = re.compile(r"download\.pytorch\.org/whl|paddlepaddle\.org\.cn")
_FRAMEWORK_WORD = re.compile(r"(?<![\w-])(?:torch|pytorch|paddlepaddle(?:-gpu)?)(?![\w-])", re.I)


def read_run(
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
            read_run(
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
    if any(p.name in FRAMEWORK_PACKAGES for p in pins) or _FRAMEWORK_INDEX.search(urls):
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
    framework = next((p for p in pins if p.name in FRAMEWORK_PACKAGES), None)
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
    if (python or VAR.fullmatch(program)) and argv[1:3] == ["-m", "pip"]:  # ${PY} -m pip: the base image's
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


def unused_conda_envs(text: str) -> frozenset[str]:
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
