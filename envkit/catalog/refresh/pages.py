"""Where index pages come from: the network, or a directory of recorded pages.

A :class:`PageSource` answers ``get(url) -> Page`` or raises :class:`PageUnreachable`.
:class:`HttpPages` reads the real indexes; :class:`RecordedPages` reads a snapshot
directory (``manifest.json`` + one file per page) and is the fake for tests;
:class:`Recorder` wraps a source and writes what it reads into such a directory,
trimmed to what the catalog uses.

A recorded page keeps the sha256 and fetch date of the page *as served*, so a
snapshot regenerates the catalog byte for byte (same pages -> same bytes).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from envkit._atomic import write_bytes_atomic
from envkit._io import TooLarge, load_json_bounded, open_regular, read_limited
from envkit.errors import EnvkitError, ExitCode

__all__ = ["HttpPages", "Page", "PageSource", "PageUnreachable", "RecordedPages", "Recorder"]

MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 4 << 20
MAX_PAGE_BYTES = 64 << 20  # the largest trimmed index page is a few MB
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")  # what _file_name writes


class PageUnreachable(EnvkitError):
    """A page could not be read (host unreachable, HTTP error, not recorded)."""

    exit_code = ExitCode.FAILURE

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(
            f"cannot read {url}: {reason}",
            hint="check the network or a proxy; `envkit catalog refresh --offline` keeps the shipped catalog",
        )
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class Page:
    """One page read for the catalog refresh: URL, body, the day it was read, its sha256 as served."""

    url: str
    body: bytes
    fetched: str  # YYYY-MM-DD, the day the page was read from its host
    sha256: str  # of the page as served, before any trimming


class PageSource(Protocol):
    """Where the refresh reads pages from: the network, or a recorded directory."""

    def get(self, url: str) -> Page: ...


class HttpPages:
    """Read pages from the network (urllib; proxies from the environment)."""

    def __init__(self, *, timeout: float = 20.0, today: Callable[[], dt.date] = dt.date.today) -> None:
        self._timeout = timeout
        self._today = today

    def get(self, url: str) -> Page:
        request = urllib.request.Request(url, headers={"User-Agent": "envkit-catalog-refresh"})  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310
                body: bytes = response.read(MAX_PAGE_BYTES + 1)  # bounded: an endless answer is refused
        except urllib.error.HTTPError as e:
            raise PageUnreachable(url, f"HTTP {e.code}") from e
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise PageUnreachable(url, f"host unreachable ({reason})") from e
        if len(body) > MAX_PAGE_BYTES:
            raise PageUnreachable(url, f"larger than {MAX_PAGE_BYTES} bytes")
        return Page(url, body, self._today().isoformat(), hashlib.sha256(body).hexdigest())


def _file_name(url: str) -> str:
    text = re.sub(r"^https?://", "", url).strip("/")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text) or "index"


class RecordedPages:
    """Pages recorded in ``directory`` (see :class:`Recorder`).

    The snapshot may come from anyone (a shared directory, a pull request): its manifest is read
    bounded and shape-checked, and each ``file`` must be a plain name in ``directory``, a regular
    file (no link, FIFO or device), read bounded.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        path = directory / MANIFEST
        try:
            with open_regular(path) as fh:
                data = load_json_bounded(read_limited(fh, MAX_MANIFEST_BYTES, path), 8)
            pages = data["pages"]
            if not isinstance(pages, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
                for k, v in pages.items()
            ):
                raise ValueError("'pages' is not an object of page entries")
        except (OSError, ValueError, KeyError, TypeError, TooLarge) as e:
            raise EnvkitError(
                f"{path}: not a recorded page snapshot ({e})",
                hint="record one with `envkit catalog refresh --record DIR`",
            ) from e
        self._manifest: dict[str, dict[str, str]] = pages

    def get(self, url: str) -> Page:
        entry = self._manifest.get(url)
        if entry is None:
            raise PageUnreachable(url, f"not recorded in {self.directory}")
        if "unreachable" in entry:
            raise PageUnreachable(url, f"{entry['unreachable']} (recorded {entry.get('fetched')})")
        name = entry.get("file", "")
        if not _PLAIN_NAME.fullmatch(name) or name in (".", "..", MANIFEST):
            raise EnvkitError(
                f"{self.directory / MANIFEST}: the page {url} is recorded as {name!r:.100}, not a file name "
                "in that directory",
                hint="a recorded page is a plain file beside manifest.json; record again with --record DIR",
            )
        path = self.directory / name
        try:
            with open_regular(path) as fh:
                body = read_limited(fh, MAX_PAGE_BYTES, path)
        except (OSError, TooLarge) as e:
            raise EnvkitError(
                f"{path}: cannot read the recorded page ({e})",
                hint="a recorded page is a regular file beside manifest.json; record again with --record DIR",
            ) from e
        return Page(url, body, entry.get("fetched", ""), entry.get("sha256", ""))


Trim = Callable[[str, bytes], bytes]


class Recorder:
    """Read through ``source`` and keep every page (trimmed) and every failure in ``directory``."""

    def __init__(self, source: PageSource, directory: Path, trim: Trim, today: str) -> None:
        self._source = source
        self._directory = directory
        self._trim = trim
        self._today = today
        self._pages: dict[str, dict[str, str]] = {}

    def get(self, url: str) -> Page:
        try:
            page = self._source.get(url)
        except PageUnreachable as e:
            self._pages[url] = {"fetched": self._today, "unreachable": e.reason}
            raise
        body = self._trim(url, page.body)
        name = _file_name(url)
        write_bytes_atomic(self._directory / name, body, within=self._directory)
        self._pages[url] = {"fetched": page.fetched, "file": name, "sha256": page.sha256}
        return Page(url, body, page.fetched, page.sha256)

    def save(self) -> None:
        text = json.dumps({"pages": dict(sorted(self._pages.items()))}, indent=1, sort_keys=True) + "\n"
        write_bytes_atomic(self._directory / MANIFEST, text.encode("utf-8"))
