"""The maintained conda-forge -> PyPI name mapping (prefix.dev's parselmouth, the one pixi uses).

Shipped as ``envkit/catalog/data/conda_pypi.json.gz``: the upstream ``compressed_mapping.json``
byte for byte, gzipped (see ``data/conda_pypi.README.md`` for source and license,
``data/conda_pypi.source.json`` for the URL, day and sha256 of the copy shipped). Each entry is
``conda name -> PyPI name`` or ``null`` (parselmouth found no Python distribution in that conda
package: a C library, a metapackage). :func:`parse_mapping` reads any copy strictly (a download, a
file); every name must be a plain package name before envkit uses it. :func:`load_mapping` reads the
shipped copy once.
"""

from __future__ import annotations

import functools
import gzip
import io
import re
import zlib
from importlib import resources

from envkit._io import load_json_bounded
from envkit.errors import CatalogError

__all__ = [
    "MAPPING_FILE",
    "MAX_ENTRIES",
    "MAX_MAPPING_BYTES",
    "SOURCE_FILE",
    "MappingInvalid",
    "load_mapping",
    "parse_mapping",
    "read_gzip_bounded",
]

MAPPING_FILE = "conda_pypi.json.gz"
SOURCE_FILE = "conda_pypi.source.json"
MAX_MAPPING_BYTES = 16 << 20  # the real file is ~0.9 MB (34,000 entries, 2026)
MAX_ENTRIES = 500_000
_CONDA_NAME = re.compile(r"[a-z0-9_][a-z0-9._+-]{0,199}")  # conda package names are lower case
_PYPI_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?")  # PEP 508


class MappingInvalid(CatalogError, ValueError):
    """A mapping copy that is not ``{conda name: PyPI name | null}``; the message says where."""


def parse_mapping(data: bytes) -> dict[str, str | None]:
    """``conda name -> PyPI name`` (or None) from the JSON ``data``; :class:`MappingInvalid` otherwise.

    Accepts parselmouth's two shapes: a name or null per entry (the top-level file pixi reads) and a
    list of names or null (the per-channel files); of a list, the name equal to the conda name wins,
    else the first.
    """
    if len(data) > MAX_MAPPING_BYTES:
        raise MappingInvalid(f"larger than {MAX_MAPPING_BYTES} bytes ({len(data)})")
    try:
        value = load_json_bounded(data, 3)
    except ValueError as e:
        raise MappingInvalid(str(e)) from e
    if not isinstance(value, dict):
        raise MappingInvalid(f"not a JSON object of conda names (a {type(value).__name__})")
    if not value:  # a server's placeholder would otherwise replace every name
        raise MappingInvalid("an empty object: no conda names")
    if len(value) > MAX_ENTRIES:
        raise MappingInvalid(f"{len(value)} entries (at most {MAX_ENTRIES})")
    mapping: dict[str, str | None] = {}
    for conda, pypi in value.items():
        if not _CONDA_NAME.fullmatch(conda):
            raise MappingInvalid(f"entry {conda[:80]!r}: not a conda package name")
        mapping[conda] = _pypi_of(conda, pypi)
    return mapping


def _pypi_of(conda: str, pypi: object) -> str | None:
    if pypi is None:
        return None
    names = pypi if isinstance(pypi, list) else [pypi]
    if not names or not all(isinstance(n, str) and _PYPI_NAME.fullmatch(n) for n in names):
        raise MappingInvalid(
            f"entry {conda!r}: {str(pypi)[:80]!r} is not a PyPI name, a list of them or null"
        )
    return conda if conda in names else str(names[0])


def read_gzip_bounded(data: bytes, limit: int = MAX_MAPPING_BYTES) -> bytes:
    """The gunzipped ``data``, at most ``limit`` bytes (a gzip bomb is refused, not inflated)."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            out = fh.read(limit + 1)
    except (OSError, EOFError, zlib.error) as e:
        raise MappingInvalid(f"not a gzip file ({e})") from e
    if len(out) > limit:
        raise MappingInvalid(f"larger than {limit} bytes once decompressed")
    return out


@functools.cache
def load_mapping() -> dict[str, str | None]:
    """The shipped mapping, read once (a missing or damaged copy is a :class:`CatalogError`)."""
    where = f"envkit/catalog/data/{MAPPING_FILE}"
    try:
        raw = resources.files("envkit.catalog").joinpath("data").joinpath(MAPPING_FILE).read_bytes()
        return parse_mapping(read_gzip_bounded(raw))
    except (OSError, MappingInvalid) as e:
        raise CatalogError(
            f"{where} is invalid: {e}",
            hint="reinstall envkit, or rebuild it with `envkit catalog refresh-names`",
        ) from e
