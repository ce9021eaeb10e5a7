"""``envkit catalog refresh-names``: download the current conda-forge -> PyPI mapping and ship it.

The download is checked whole before anything is written (:func:`envkit.catalog.conda_pypi.parse_mapping`:
a JSON object, bounded in bytes and entries, every key a conda name and every value a PyPI name or
null; nothing in it becomes a path), then written gzipped (byte-identical upstream text, gzip
``mtime`` 0: same download, same bytes) with its record (URL, day, sha256, size, entries) beside it;
both writes are atomic.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from envkit._atomic import write_bytes_atomic
from envkit._io import TooLarge, open_regular, read_limited
from envkit._pep503 import canonicalize_name
from envkit.catalog.conda_pypi import MAX_MAPPING_BYTES, SOURCE_FILE, MappingInvalid, parse_mapping
from envkit.catalog.refresh.pages import Page, PageSource
from envkit.errors import EnvkitError

__all__ = ["MAPPING_URL", "FilePages", "NamesOutcome", "refresh_names"]

# What pixi fetches (parselmouth's README, "Legacy compressed mapping, top-level"); the same file is
# committed as files/compressed_mapping.json in github.com/prefix-dev/parselmouth.
MAPPING_URL = "https://conda-mapping.prefix.dev/compressed-v0/compressed_mapping.json"


class FilePages:
    """A downloaded copy of the mapping read from a local file (``--file``), bounded, regular files only."""

    def __init__(self, path: Path, today: str) -> None:
        self._path = path
        self._today = today

    def get(self, url: str) -> Page:
        try:
            with open_regular(self._path, follow=True) as fh:
                body = read_limited(fh, MAX_MAPPING_BYTES, self._path)
        except TooLarge as e:
            raise EnvkitError(
                f"{self._path}: not a conda -> PyPI name mapping ({e}); nothing was written",
                hint="the real mapping is about 1 MB; check the file",
            ) from e
        except OSError as e:
            raise EnvkitError(f"{self._path}: cannot read ({e.strerror or e})", hint="check the path") from e
        return Page(str(self._path), body, self._today, hashlib.sha256(body).hexdigest())


@dataclass(frozen=True)
class NamesOutcome:
    """What a names refresh did: the file, whether it changed, the download's record."""

    output: Path
    changed: bool
    record: dict[str, object]

    def to_json(self) -> dict[str, object]:
        return {"output": str(self.output), "changed": self.changed, "source": self.record}

    def summary(self) -> str:
        state = "changed" if self.changed else "unchanged"
        return (
            f"{self.record['entries']} conda names ({self.record['renamed']} renamed, "
            f"{self.record['not_python']} not Python) from {self.record['url']}\n{self.output} {state}"
        )


def refresh_names(
    source: PageSource, output: Path, *, url: str = MAPPING_URL, check: bool = False
) -> NamesOutcome:
    """Read ``url`` through ``source``, verify it, write ``output`` (gzip) and its record beside it."""
    page = source.get(url)
    record = _record(page)
    data = gzip.compress(page.body, compresslevel=9, mtime=0)
    record_text = (json.dumps(record, indent=1, sort_keys=True) + "\n").encode("utf-8")
    record_path = output.with_name(SOURCE_FILE)
    changed = not output.is_file() or output.read_bytes() != data
    if changed and not check:
        write_bytes_atomic(output, data)
        write_bytes_atomic(record_path, record_text)
    return NamesOutcome(output, changed, record)


def _record(page: Page) -> dict[str, object]:
    try:
        mapping = parse_mapping(page.body)
    except MappingInvalid as e:
        raise EnvkitError(
            f"{page.url}: not a conda -> PyPI name mapping ({e}); nothing was written",
            hint="the shipped mapping is kept; check the URL (--url) or try again later",
        ) from e
    renamed = sum(
        1 for k, v in mapping.items() if v is not None and canonicalize_name(v) != canonicalize_name(k)
    )
    return {
        "url": page.url,
        "fetched": page.fetched,
        "sha256": hashlib.sha256(page.body).hexdigest(),
        "bytes": len(page.body),
        "entries": len(mapping),
        "renamed": renamed,
        "not_python": sum(1 for v in mapping.values() if v is None),
    }
