"""requirements.txt / pip freeze lines and ``pip install`` arguments -> pins, indexes and what is lost.

The inventory reader (:func:`envkit.inventory.readers_text.read_requirements`) keeps only the
installed version of each line; a spec needs the requirement as written (``scipy>=1.10,<1.14``,
markers) and the pip options (``-i``, ``--extra-index-url``, ``-f``, ``-r``), so this reads them.
Lines that cannot become a spec pin are reported, never dropped silently: editable installs,
local paths and wheels, VCS and direct URLs, environment variables, pip options the spec has no
field for. A line with shell syntax in it is refused (:func:`envkit.adopt.evidence.hostile`).
"""

from __future__ import annotations

import itertools
import re
import shlex
import stat
from collections.abc import Sequence
from pathlib import Path

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement

from envkit._io import TooLarge, open_regular, read_limited
from envkit._pep503 import canonicalize_name
from envkit.adopt.evidence import AdoptError, Collected, PipPin, hostile, joined_lines, refuse, shown_item
from envkit.adopt.sources.reader import Read, SourceText, bounded, diff_inventory
from envkit.adopt.wheel_names import framework_wheel, torch_hint

__all__ = [
    "MAX_TEXT_BYTES",
    "add_requirement",
    "confined",
    "marker_holds",
    "pip_args",
    "read_requirements",
    "read_requirements_file",
    "requirement_line",
    "requirement_lines",
]

MAX_TEXT_BYTES = 4 * 1024 * 1024  # a requirements.txt or Dockerfile is a few KB; 4 MiB is not one
MAX_INCLUDE_DEPTH = 5
_INDEX = {"-i", "--index-url"}
_EXTRA = {"--extra-index-url", "-f", "--find-links"}
_INCLUDE = {"-r", "--requirement", "-c", "--constraint"}
_EDITABLE = {"-e", "--editable"}
# pip options that take a value and that a spec has no field for (reported, value skipped)
_VALUED = {
    "--trusted-host",
    "--hash",
    "--config-settings",
    "-C",
    "--global-option",
    "--platform",
    "--python-version",
    "--target",
    "-t",
    "--prefix",
    "--root",
    "--src",
    "--cache-dir",
    "--progress-bar",
    "--timeout",
    "--retries",
    "--proxy",
    "--cert",
    "--client-cert",
    "--only-binary",
    "--no-binary",
    "--implementation",
    "--abi",
    "--upgrade-strategy",
    "--report",
    "--log",
    "--exists-action",
}
# options that change nothing a spec records (the lock pins and hashes everything anyway)
_QUIET = {
    "-q",
    "--quiet",
    "-v",
    "--verbose",
    "--no-cache-dir",
    "-U",
    "--upgrade",
    "--user",
    "--disable-pip-version-check",
    "--no-input",
    "--require-hashes",
    "--force-reinstall",
    "-I",
    "--ignore-installed",
    "--prefer-binary",
    "--no-warn-script-location",
    "--compile",
    "--no-compile",
    "-y",
    "--yes",
    "--break-system-packages",
    "--root-user-action",
}
_URL_LINE = re.compile(r"^(?:git\+|hg\+|svn\+|bzr\+|https?://|file:|\.{0,2}/|~/)|\.(?:whl|tar\.gz|zip)\Z")
_VAR = re.compile(r"\$\{?[A-Za-z_]")
_WHEEL_PYTHON = re.compile(r"-cp3(\d{1,2})-cp3\d{1,2}")
_OPTION_START = re.compile(r"\s--?[A-Za-z]")
_RANGED_LOCAL = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<op>~=|>=|<=|>|<)\s*(?P<version>\d+(?:\.\d+)*)"
    r"\+(?P<local>[A-Za-z0-9.]+)[ \t]*\Z"
)
_FRAMEWORK_NAMES = {"torch", "paddlepaddle", "paddlepaddle-gpu"}


def read_requirements(source: SourceText) -> Read:
    """A requirements file, ``pip freeze`` or ``pip list``: its lines, and its ``envkit diff`` listing."""
    bounded(source, MAX_TEXT_BYTES)
    found = Collected(source.label, "requirements")
    requirement_lines(source.text, found, label=source.label, base=source.path.parent)
    return found, diff_inventory(source)


def read_requirements_file(
    path: Path,
    found: Collected,
    *,
    label: str,
    depth: int = 0,
    root: Path | None = None,
    base: Path | None = None,
) -> None:
    """Read a requirements file (and the files it includes with ``-r``/``-c``, when present).

    ``base``: where its relative includes are (default: ``path``'s folder); ``root``: the folder
    they must stay in once links are resolved (default: ``base``).
    """
    try:
        with open_regular(path) as fh:  # a regular file, never a FIFO or a link swapped in
            text = read_limited(fh, MAX_TEXT_BYTES, path).decode("utf-8").removeprefix("\ufeff")
    except TooLarge as e:
        raise AdoptError(
            f"{label}: larger than {e.limit} bytes: not a requirements file; nothing was written",
            hint="check the path",
        ) from e
    except UnicodeDecodeError as e:
        raise AdoptError(f"{label}: not UTF-8 text (byte {e.start})", hint="is this a binary file?") from e
    except OSError as e:
        raise AdoptError(
            f"{label}: cannot read: {e.strerror or e}; nothing was written", hint="check the -r line"
        ) from e
    requirement_lines(text, found, label=label, base=base or path.parent, depth=depth, root=root)


def requirement_lines(
    text: str, found: Collected, *, label: str, base: Path | None, depth: int = 0, root: Path | None = None
) -> None:
    compiled = _COMPILED_WITH.search(text) or _PYTHON_COMMENT.search(text)
    if compiled and found.python is None:
        number = text.count("\n", 0, compiled.start()) + 1
        found.python = compiled[1] or compiled[2]
        what = "the compile header" if compiled.re is _COMPILED_WITH else "a comment stating it"
        found.python_where = f"{label}:{number} ({what})"
    _install_command(text, found, label)
    for number, line in joined_lines(text):
        stripped = re.sub(r"(^|\s)#.*$", "", line).strip()  # a trailing comment
        if stripped:
            requirement_line(stripped, f"{label}:{number}", found, base=base, depth=depth, root=root)


def requirement_line(
    line: str, where: str, found: Collected, *, base: Path | None, depth: int = 0, root: Path | None = None
) -> None:
    """One logical line of a requirements file (or of an environment.yml's ``pip:`` list)."""
    line = line.strip()
    if not line or line.startswith("#"):
        return
    if hostile(line):
        raise refuse(where, line)
    option = _OPTION_START.search(line) if not line.startswith("-") else None
    requirement, rest = ("", line) if line.startswith("-") else (line, "")
    if option:
        requirement, rest = line[: option.start()], line[option.start() :]
    try:
        tokens = shlex.split(rest, comments=False, posix=True)
    except ValueError:
        found.lose(where, line, "unbalanced quotes: not a requirement line")
        return
    if requirement:
        add_requirement(requirement.strip(), where, found)
    pip_args(tokens, found, where=where, base=base, depth=depth, requirements=not requirement, root=root)


def pip_args(
    tokens: Sequence[str],
    found: Collected,
    *,
    where: str,
    base: Path | None,
    depth: int = 0,
    requirements: bool = True,
    root: Path | None = None,
) -> None:
    """``pip install`` arguments (or a requirements line's options) into ``found``.

    ``base``: where relative ``-r``/``-c`` files are; ``root`` (default ``base``): the source's
    folder, which every include must resolve into (links followed) or it is not read.
    """
    index = 0
    while index < len(tokens):
        token = tokens[index]
        option, _, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        takes_value = option in _INDEX | _EXTRA | _INCLUDE | _EDITABLE | _VALUED
        value = inline or (tokens[index + 1] if takes_value and index + 1 < len(tokens) else "")
        if takes_value and not inline:
            index += 1
        index += 1
        if option in _INDEX:
            found.index_urls.append((value, where))
        elif option in _EXTRA:
            found.extra_urls.append((value, where))
            found.torch_hints.extend(h for h in [torch_hint(value, where)] if h is not None)
        elif option in _INCLUDE:
            _include(value, option, found, where=where, base=base, depth=depth, root=root or base)
        elif option in _EDITABLE:
            found.lose(where, f"-e {value}", "an editable install (a checkout on that machine): not carried")
        elif option == "--hash":
            continue  # the lock hashes what it pins
        elif option in _VALUED:
            found.lose(where, f"{option} {value}", "a pip option the spec has no field for")
        elif option in _QUIET or (option == "--no-deps" and not requirements):
            continue
        elif token.startswith("-"):
            found.lose(where, token, "a pip option the spec has no field for")
        elif requirements:
            add_requirement(token, where, found)


def _include(
    value: str, option: str, found: Collected, *, where: str, base: Path | None, depth: int, root: Path | None
) -> None:
    item = f"{option} {value}"
    if Path(value).is_absolute() or value.startswith("~"):
        found.unread.append((where, item))
        found.lose(where, item, "an absolute path (on that machine or in an image): not read")
        return
    if "://" in value or value.startswith("file:"):
        found.unread.append((where, item))
        found.lose(
            where, item, "a URL: envkit init reads files beside the source only; not fetched, not read"
        )
        return
    if base is None or root is None or _VAR.search(value):
        found.unread.append((where, item))
        found.lose(where, item, "includes a file that is not beside the source: not read")
        return
    target, why = confined(base / value, root)
    if target is None:
        found.unread.append((where, item))
        found.lose(where, item, why)
        return
    if depth >= MAX_INCLUDE_DEPTH:
        raise AdoptError(
            f"{where}: {option} {value}: includes nest deeper than {MAX_INCLUDE_DEPTH} files; "
            "nothing was written",
            hint="a requirements file that includes itself? check the -r lines",
        )
    if option in {"-c", "--constraint"}:
        found.lose(where, item, "a constraints file: its pins are not requirements; not carried")
        return
    # read the resolved file; its own includes are relative to where it is named (as pip does)
    read_requirements_file(target, found, label=value, depth=depth + 1, root=root, base=(base / value).parent)


def confined(path: Path, root: Path) -> tuple[Path | None, str]:
    """``path`` with its links resolved when it is a regular file inside ``root`` (resolved too),
    else ``(None, why)``: a ``..`` or a link out of the source's folder is never followed."""
    try:
        top = root.resolve(strict=True)
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a dangling link, a loop
        return None, "includes a file that is not beside the source: not read"
    if not target.is_relative_to(top):
        return None, (
            "resolves outside the source's folder (a '..' or a link leading out of it): "
            "envkit init reads files beside the source only; not read"
        )
    if any(part.startswith(".") for part in target.relative_to(top).parts):
        # .ssh/id_rsa, .env, .netrc, .aws/credentials: no requirements file is hidden
        return None, "a hidden file or folder (.ssh, .env, .netrc, ...): not read"
    try:
        regular = stat.S_ISREG(target.stat().st_mode)
    except OSError:
        regular = False
    if not regular:
        return None, "not a regular file (a folder, FIFO or device): not read"
    return target, ""


def add_requirement(text: str, where: str, found: Collected) -> None:
    """One requirement: a :class:`PipPin`, or a Lost line saying why it cannot be one."""
    if hostile(text):
        raise refuse(where, text)
    if _VAR.search(text):
        found.lose(where, text, "uses a variable the source does not set: not carried")
        return
    wheel_python = _WHEEL_PYTHON.search(text)
    if wheel_python and found.python is None:
        found.python, found.python_where = f"3.{wheel_python[1]}", f"{where} (a cp3{wheel_python[1]} wheel)"
    if text.rstrip("/") in {".", ".."} or re.fullmatch(r"\.{1,2}(?:/[\w./-]*)?(?:\[[\w,\s-]*\])?", text):
        found.unread.append((where, text))
        found.lose(
            where, text, "a local project: its dependencies are in its pyproject.toml/setup.py, not read"
        )
        return
    if _URL_LINE.search(text) and " @ " not in text:
        text = _url_line(text, where, found)
        if not text:
            return
    ranged_local = _RANGED_LOCAL.match(text)
    if ranged_local and canonicalize_name(ranged_local["name"]) in _FRAMEWORK_NAMES:
        # `torch~=2.5.1+cu124`: pip refuses a local version in a range; what it means is 2.5.1 on cu124
        pinned = f"{ranged_local['name']}=={ranged_local['version']}+{ranged_local['local']}"
        found.notes.append(
            f"{text} ({where}): a local version in a {ranged_local['op']} range is not PEP 440 (pip refuses "
            f"it); read as {pinned}"
        )
        text = pinned
    try:
        req = Requirement(text)
    except InvalidRequirement as e:
        found.lose(where, text, f"not a PEP 508 requirement ({str(e).splitlines()[0][:80]})")
        return
    if req.url:
        pin = _url_line(req.url, where, found)
        if pin:
            add_requirement(pin, where, found)
        return
    name = canonicalize_name(req.name)
    if _set_aside(name, req, text, where, found):
        return
    exact = [s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    found.pip.append(PipPin(name, text.strip(), exact[0] if len(exact) == 1 else "", where))


def _set_aside(name: str, req: Requirement, text: str, where: str, found: Collected) -> bool:
    """A line for another platform (its marker), or no pip package (``python==3.10``): read
    aside, with why; True when ``req`` is no pin of the spec."""
    if req.marker is not None and not marker_holds(req.marker, found.platform):
        found.lose(
            where, text, f"its marker ({req.marker}) does not hold on Linux: not installed there; not carried"
        )
        return True
    if name in _NOT_PIP:
        _not_pip(name, req, text, where, found)
        return True
    return False


_PYTHON_MARKERS = re.compile(r"\bpython_(?:full_)?version\b|\bimplementation_version\b|\bextra\b")


def marker_holds(marker: Marker, platform: str | None) -> bool:
    """Whether ``marker`` holds on the Linux machine a spec builds for (``platform``, a conda subdir, when the
    source names one). A marker on the Python version or an extra is kept (True): what it depends on is
    decided later, so only a platform marker can set a line aside."""
    if _PYTHON_MARKERS.search(str(marker)):
        return True
    machine = "aarch64" if platform == "linux-aarch64" else "x86_64"
    env = {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": machine,
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_version": "",
    }
    try:
        return marker.evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True


# pip-tools 7: "autogenerated by pip-compile with Python 3.11"; uv: "uv pip compile ... --python-version 3.11"
_COMPILED_WITH = re.compile(
    r"^#.*autogenerated by pip-compile with Python (3\.\d+)"
    r"|^#\s+uv pip compile\b.*--python-version[= ](3\.\d+)",
    re.M,
)
# "# Python version: 3.11.7 (please ...)", "# python 3.11", "# Python 3.10.12": the author states it
_PYTHON_COMMENT = re.compile(
    r"^#\s*(?:[-*]\s+)?python(?:\s+version)?\s*[:=]?\s*(3\.\d{1,2})(?:\.\d+)?\b(?!\.)(?!\s*[<>+-])",
    re.I | re.M,
)
# "#   pip install -r requirements-cu121.txt --index-url https://download.pytorch.org/whl/cu121": how
# the file says it is installed
_INSTALL_COMMENT = re.compile(r"^#.*?\bpip3?\s+install\s+(?P<args>.*)$", re.M)
_INDEX_OPTIONS = _INDEX | _EXTRA


def _install_command(text: str, found: Collected, label: str) -> None:
    """A comment giving the command that installs this very file (``pip install -r NAME`` where
    NAME is the file's name, or the name a renamed copy ends with) with an index option: the index
    is read as if the file said it (the file alone installs another build: PyPI's). Other commands
    in comments (another file, an alternative CUDA) are not read."""
    own = Path(label).name
    for match in _INSTALL_COMMENT.finditer(text):
        if hostile(match["args"]):
            where = f"{label}:{text.count(chr(10), 0, match.start()) + 1}"
            found.lose(where, shown_item(match[0]), "a command with shell syntax in a comment: not read")
            continue
        try:
            tokens = shlex.split(match["args"], comments=True, posix=True)
        except ValueError:
            continue
        files = [b for a, b in itertools.pairwise(tokens) if a in ("-r", "--requirement")]
        if not any(own == Path(f).name or own.endswith(f"-{Path(f).name}") for f in files):
            continue
        options = [token for a, b in itertools.pairwise(tokens) if a in _INDEX_OPTIONS for token in (a, b)]
        options += [t for t in tokens if t.split("=", 1)[0] in _INDEX_OPTIONS and "=" in t]
        if not options:
            continue
        number = text.count("\n", 0, match.start()) + 1
        where = f"{label}:{number}"
        found.notes.append(
            f"{shown_item(match[0].lstrip('# '))} ({where}): the install command the file states: "
            "its index options read as the file's"
        )
        pip_args(options, found, where=where, base=None, requirements=False)


_NOT_PIP = {"python", "cuda", "cudatoolkit", "cuda-toolkit", "cudnn"}


def _not_pip(name: str, req: Requirement, text: str, where: str, found: Collected) -> None:
    """``python==3.10.14`` (or ``cuda==12.1``) in a requirements-style list states the Python (CUDA)
    the author ran; pip cannot install it. The Python is read as stated; the CUDA is reported."""
    if name == "python":
        exact = [s.version for s in req.specifier if s.operator in ("==", "===")]
        match = re.match(r"(3\.\d+)", exact[0]) if len(exact) == 1 else None
        stated = match[1] if match else str(req.specifier)
        if stated and found.python is None:
            found.python, found.python_where = stated, where
        found.notes.append(f"{text} ({where}): the Python the source states, read as Python {stated}")
        return
    found.lose(
        where,
        text,
        f"{name} is no pip package: the spec's CUDA comes from the framework's build "
        "(rerun with --cuda to choose it)",
    )


def _url_line(url: str, where: str, found: Collected) -> str:
    """A URL (or file) line: a framework's own wheel becomes its pin (``torch==2.0.0+cu118``, read
    from the file name: envkit installs it from the index); a wheel or page built for a torch
    release is kept as a hint of that release; anything else is reported. "" when nothing is pinned."""
    pin = framework_wheel(url) if url.startswith(("https://", "http://")) else None  # a local file: a build
    if pin:
        found.notes.append(
            f"{shown_item(url)} ({where}): a framework's wheel by URL, read as {pin} from its file name "
            "(the spec installs it from the framework's index, not from that URL)"
        )
        return pin
    hint = torch_hint(url, where)
    if hint is not None:
        found.torch_hints.append(hint)
    found.lose(where, url, _url_why(url))
    return ""


def _url_why(url: str) -> str:
    if url.startswith(("git+", "hg+", "svn+", "bzr+")):
        return (
            "a VCS checkout: the spec pins released versions only (publish a release, or a wheel on a mirror)"
        )
    if url.startswith(("file:", "/", ".", "~")) or "://" not in url:
        return "a local build (a file on that machine): not carried"
    return "a direct URL: a spec's pins come from an index, with hashes (put the wheel on the mirror)"
