"""What ``envkit init --from`` read from a source, before any decision: pins, indexes, what is lost.

Every reader (:mod:`envkit.adopt.sources.conda_env`, :mod:`~envkit.adopt.sources.requirements`,
:mod:`~envkit.adopt.sources.dockerfile`, :mod:`~envkit.adopt.sources.inventory`) fills one
:class:`Collected`; :mod:`envkit.adopt.plan` turns it into a spec. A :class:`Lost` line says
what the spec will not carry and why, with the file and line it came from. Text from the
source is redacted (credentials) and neutralised (terminal controls) when it is stored here,
so nothing downstream can leak or replay it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from envkit._lines import logical_lines
from envkit._safe import neutralise, redact, sensitive_name, url_credentials
from envkit.adopt.wheel_names import TorchHint
from envkit.errors import UsageError

__all__ = [
    "MAX_SHOWN",
    "PROXY_VARIABLES",
    "PROXY_WHY",
    "AdoptError",
    "Collected",
    "CondaPin",
    "Lost",
    "PipPin",
    "hostile",
    "is_defaults",
    "joined_lines",
    "one_line",
    "shown_item",
    "without_credentials",
]

MAX_SHOWN = 160  # characters of a source line quoted in a Lost line
# What never appears in a package pin but does in a shell command: a pin carrying one is refused.
_SHELL = re.compile(
    r"`|\$\(|&&|\|\||[;|]\s*(?:rm|curl|wget|sh|bash|python|eval|exec)\b|[\x00-\x08\x0a-\x1f\x7f]"
)


PROXY_VARIABLES = {"http_proxy", "https_proxy", "ftp_proxy", "no_proxy", "all_proxy"}
PROXY_WHY = (
    "a proxy of the machine that built it: never baked into an image (set it for the build, "
    "e.g. docker build --build-arg, or in the environment envkit runs in): not carried"
)

DEFAULTS = {  # Anaconda's channels: `defaults` and what conda shows for it
    "defaults",
    "main",
    "anaconda",
    "pkgs/main",
    "pkgs/r",
    "pkgs/free",
    "pkgs/msys2",
    "r",
    "free",
    "msys2",
}
_DEFAULTS_URL = re.compile(r"^https?://repo\.anaconda\.(?:com|org)/pkgs/")


def is_defaults(channel: str) -> bool:
    """Anaconda's ``defaults`` channels, by name (``defaults``, ``pkgs/main``, ``anaconda``) or URL."""
    return channel.lower().rstrip("/") in DEFAULTS or bool(_DEFAULTS_URL.match(channel))


class AdoptError(UsageError):
    """A source ``envkit init --from`` refuses (exit 2): hostile, unreadable, or not buildable."""


@dataclass(frozen=True)
class Lost:
    """One thing of the source the spec does not carry, and why."""

    where: str  # "environment.yml:12", "Dockerfile:3" or the source's label
    item: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"where": self.where, "item": self.item, "why": self.why}

    def __str__(self) -> str:
        return f"{self.where}: {self.item}: {self.why}"


@dataclass(frozen=True)
class CondaPin:
    """A conda match spec as the source wrote it (``numpy=1.26.4=py311h...``, ``numpy>=1.24``)."""

    name: str  # lower-case conda name
    spec: str
    version: str = ""  # the exact version it pins, "" when it is a range or unpinned
    build: str | None = None
    channel: str | None = None  # its own channel (``pytorch::pytorch``, a conda list's column)
    where: str = ""


@dataclass(frozen=True)
class PipPin:
    """A PEP 508 requirement as the source wrote it (``torch==2.1.2+cu121``, ``scipy>=1.10``)."""

    name: str  # PEP 503 normalized
    spec: str
    version: str = ""  # the exact ``==`` version, "" otherwise
    where: str = ""


@dataclass
class Collected:
    """Everything one source says, as read (decisions are :mod:`envkit.adopt.plan`'s)."""

    origin: str  # the source as shown: a path, ``image:REF`` or ``host``
    kind: str  # environment.yml, requirements, dockerfile, or an inventory format
    name: str | None = None  # the environment's own name (environment.yml ``name:``)
    conda: list[CondaPin] = field(default_factory=list)
    pip: list[PipPin] = field(default_factory=list)
    channels: list[str] = field(default_factory=list)
    index_urls: list[tuple[str, str]] = field(default_factory=list)  # (url, where) for -i/--index-url
    extra_urls: list[tuple[str, str]] = field(default_factory=list)  # --extra-index-url, -f
    base_image: str | None = None
    python: str | None = None  # a Python version or constraint the source states
    python_where: str = ""
    platform: str | None = None  # a conda subdir when the source says
    env: dict[str, str] = field(default_factory=dict)
    lost: list[Lost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # (where, what): the environment is installed from a file envkit did not read (uv sync, -r elsewhere)
    unread: list[tuple[str, str]] = field(default_factory=list)
    distro_python: str = ""  # where the OS's own python3 is installed (apt-get install python3 ...)
    # torch releases named by wheels built against them or find-links pages (flash_attn-...+cu126torch2.6)
    torch_hints: list[TorchHint] = field(default_factory=list)
    # the CUDA driver the machine must have (pixi's system-requirements cuda): no build's CUDA
    cuda_requirement: tuple[str, str] | None = None  # (version, where)
    # (where, command): a framework installed in a shell branch the ARG/ENV defaults did not choose
    other_branches: list[tuple[str, str]] = field(default_factory=list)

    def lose(self, where: str, item: str, why: str) -> None:
        self.lost.append(Lost(where, shown_item(item), why))


def joined_lines(text: str) -> Iterator[tuple[int, str]]:
    """Logical lines of a requirements file or a Dockerfile: backslash continuations joined, blank
    and comment lines dropped (also between continuation lines, as Docker does): (first line, text)."""
    return logical_lines(text, drop_comments=True)


def one_line(text: str) -> str:
    """``text`` fit to show and to store: one line, credentials redacted, terminal controls visible."""
    return " ".join(neutralise(redact(text, index=True)).split())


def shown_item(text: str) -> str:
    """A source fragment as :func:`one_line`, bounded to :data:`MAX_SHOWN` characters."""
    one = one_line(text)
    return one if len(one) <= MAX_SHOWN else one[: MAX_SHOWN - 1] + "…"


def hostile(text: str) -> bool:
    """``text`` holds shell syntax or control characters that no package pin holds."""
    return _SHELL.search(text) is not None


def refuse(where: str, text: str) -> AdoptError:
    return AdoptError(
        f"{where}: {shown_item(text)!r} is a shell command, not a package pin; nothing was written",
        hint="envkit never runs what a source says: fix or remove that line, then rerun `envkit init --from`",
    )


def without_credentials(url: str) -> tuple[str | None, str | None]:
    """``(url without user:password, tokens and secret query parameters, what was removed)``.

    ``(None, why)`` when the URL cannot be cleaned (unparsable, or still carrying a secret).
    """
    found = url_credentials(url, index=True)  # an index's path holds no digest: a long run is a token
    if found is None:
        return url, None
    try:
        parts = urlsplit(url)
        netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return None, "an unparsable URL"
    path = re.sub(r"/t/[^/]+", "", parts.path)
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if not sensitive_name(k.strip())])
    clean = urlunsplit((parts.scheme, netloc, path, query, parts.fragment))
    if url_credentials(clean, index=True) is not None:
        return None, found
    return clean, found
