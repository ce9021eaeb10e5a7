"""Downloading one file: the :class:`Fetcher` seam and a urllib adapter (the fake: envkit.offline.testing).

A fetcher streams bytes; the caller hashes them as they arrive (see
:func:`envkit.offline.collect.fetch_verified`), so a file is never trusted before its sha256 is known.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import unquote, urlsplit

from envkit.errors import PackError

__all__ = ["CHUNK", "Fetcher", "UrlFetcher", "fetch_bytes"]

CHUNK = 1 << 20


class Fetcher(Protocol):
    """Downloads one file, streaming its bytes to the caller (who hashes them as they arrive)."""

    def fetch(self, url: str, sink: Callable[[bytes], None]) -> None:
        """Stream the bytes at ``url`` into ``sink`` (raises :class:`PackError` when unreachable)."""
        ...


def fetch_bytes(fetcher: Fetcher, url: str) -> bytes:
    """The whole file at ``url``, for a download that is checked as a whole (the advisory export)."""
    chunks: list[bytes] = []
    fetcher.fetch(url, chunks.append)
    return b"".join(chunks)


class UrlFetcher:
    """``http(s)://`` and ``file://`` through urllib (proxies from the environment, as pip does)."""

    def __init__(self, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s

    def fetch(self, url: str, sink: Callable[[bytes], None]) -> None:
        with self._open(url) as stream:
            while chunk := stream.read(CHUNK):
                sink(chunk)

    @contextmanager
    def _open(self, url: str) -> Iterator[BinaryIO]:
        parts = urlsplit(url)
        try:
            if parts.scheme == "file":
                with Path(unquote(parts.path)).open("rb") as fh:
                    yield fh
                return
            if parts.scheme not in {"http", "https"}:
                raise PackError(
                    f"cannot download {url}: unsupported URL scheme", hint="use https:// or file://"
                )
            request = urllib.request.Request(url, headers={"User-Agent": "envkit"})  # noqa: S310 - scheme checked
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                yield response
        except (OSError, urllib.error.URLError) as e:
            raise PackError(
                f"cannot download {url}: {e}",
                hint="check the network, or point mirrors.conda in the spec at a reachable mirror",
            ) from e
