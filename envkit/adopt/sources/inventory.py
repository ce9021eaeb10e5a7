"""Any inventory ``envkit diff`` reads (conda list in every layout, --explicit, --export, pip
freeze / list JSON, collect_env, probe reports, snapshots, conda-lock / pixi / uv / pylock /
poetry locks), an image (``envkit snapshot --image``) or this host -> exact pins.

The inventory readers do the reading (:func:`envkit.inventory.parse_inventory`); this turns each
installed package into an exact pin: conda rows ``name==version=build`` (the build dropped
where it names another platform's or the defaults channel's build), pip rows ``name==version``.
What is not a release on an index (editable installs, local builds, VCS checkouts) is reported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from importlib import metadata

from envkit.adopt.evidence import AdoptError, Collected, CondaPin, PipPin, is_defaults
from envkit.adopt.sources.reader import Read, SourceText
from envkit.errors import InventoryError
from envkit.inventory import Inventory, parse_inventory
from envkit.inventory.models import VCS_VERSION_PREFIX, Package

__all__ = ["collect_inventory", "host_local_installs", "read_inventory", "snapshot_inventory"]


def read_inventory(source: SourceText) -> Read:
    """A listing ``envkit diff`` reads (``source.format``): every package as an exact pin."""
    try:
        inventory = parse_inventory(
            source.text, path=source.label, label=source.path.stem, format=source.format
        )
    except InventoryError as e:
        raise AdoptError(f"{e.message}; nothing was written", hint=e.hint) from e
    found = Collected(source.label, inventory.format)
    collect_inventory(inventory, found)
    if inventory.format == "conda-export":
        _skipped_rows(source.text, inventory, found, source.label)
    return found, inventory


def _skipped_rows(text: str, inventory: Inventory, found: Collected, label: str) -> None:
    """Rows of a ``conda list --export`` the listing reader skips (a bare name, no version): reported."""
    read = {p.name.lower() for p in inventory.packages}
    for number, line in enumerate(text.splitlines(), start=1):
        row = line.strip()
        name = re.split(r"[=<>!\s]", row, maxsplit=1)[0].lower() if row and not row.startswith("#") else ""
        if name and name not in read:
            found.lose(f"{label}:{number}", row, "a row without a version (no exact pin): not carried")


def collect_inventory(inventory: Inventory, found: Collected) -> None:
    """Every package of ``inventory`` as an exact pin (or a Lost line)."""
    label = found.origin
    platform = inventory.meta.get("platform") or _platform_of(inventory)
    if platform and platform.startswith(("linux-", "win-", "osx-")):
        found.platform = platform
    python = inventory.meta.get("python") or inventory.meta.get("python.version")
    if python:
        found.python, found.python_where = python.split()[0], label
    elif inventory.meta.get("requires_python") and inventory.meta.get("python_assumed"):
        # a lock for ">=3.12": its markers were read for one Python; the spec takes that one
        found.python = inventory.meta["python_assumed"]
        requires = inventory.meta["requires_python"]
        found.python_where = f"{label}: requires-python {requires}, the Python its markers were read for"
    selected = inventory.meta.get("selected")
    if selected:
        found.notes.append(f"read {selected} of {label}")
    channels: list[str] = []
    for package in inventory.packages:
        where = f"{label}:{package.line}" if package.line else label
        if package.installer == "conda":
            _conda_row(package, where, found, channels)
        else:
            _pip_row(package, where, found)
    found.channels.extend(dict.fromkeys(channels))  # in order of first use, once


def _conda_row(package: Package, where: str, found: Collected, channels: list[str]) -> None:
    channel = package.channel or None
    if channel and "://" in channel:
        channel = channel.rstrip("/")
    if channel:
        channels.append("defaults" if is_defaults(channel) else channel)
    if not package.version:
        found.lose(where, package.name, "no version in the listing: not carried")
        return
    spec = f"{package.name}=={package.version}" + (f"={package.build}" if package.build else "")
    found.conda.append(CondaPin(package.name, spec, package.version, package.build, channel, where))


def _pip_row(package: Package, where: str, found: Collected) -> None:
    url = package.url or ""
    if package.version.startswith(VCS_VERSION_PREFIX) or url.startswith(("git+", "hg+", "svn+", "bzr+")):
        found.lose(
            where,
            f"{package.name} @ {url or package.version}",
            "a VCS checkout: the spec pins released versions only",
        )
        return
    if url.startswith(("file:", "/", ".")) or (url and "://" not in url):
        found.lose(
            where,
            f"{package.name} @ {url}",
            "a local build or editable install (a file on that machine): not carried",
        )
        return
    if url and _is_index(url):  # a lock's registry source (uv.lock `registry = ...`): an index, not a file
        if not _PYPI.match(url) and url not in {u for u, _ in found.extra_urls}:
            found.extra_urls.append((url, where))
        url = ""
    if url:
        what = f"{package.name}=={package.version}" if package.version else package.name
        found.lose(where, f"{what} @ {url}", "a direct URL: a spec's pins come from an index, with hashes")
        return
    if not package.version:
        found.lose(where, package.name, "no version in the listing: not carried")
        return
    spec = f"{package.name}=={package.version}"
    found.pip.append(PipPin(package.name, spec, package.version, where))


_FILE = re.compile(r"\.(?:whl|tar\.gz|tgz|tar\.bz2|zip|egg)(?:[#?].*)?\Z", re.I)
_PYPI = re.compile(r"^https?://(?:pypi\.org|pypi\.python\.org)/simple/?\Z")


def _is_index(url: str) -> bool:
    """A package index (``https://download.pytorch.org/whl/cu124``), not a file to install."""
    return "://" in url and not _FILE.search(url) and not url.startswith(("git+", "file:"))


def _platform_of(inventory: Inventory) -> str | None:
    prefix = inventory.meta.get("prefix", "")
    if prefix[1:3] in (":\\", ":/") or "\\" in prefix:
        return "win-64"
    if prefix.startswith("/Users/"):
        return "osx-64"
    return None


def snapshot_inventory(snapshot: Mapping[str, object], label: str) -> Inventory:
    """A snapshot (``envkit snapshot`` of an image or this host) read by the inventory reader."""
    return parse_inventory(json.dumps(snapshot), path=label, label=label, format="snapshot")


def host_local_installs() -> dict[str, str]:
    """Distributions of this interpreter installed from a directory or a VCS (PEP 610), by name."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        raw = dist.read_text("direct_url.json")
        name = dist.metadata["Name"]
        if not raw or not name:
            continue
        try:
            info = json.loads(raw)
        except ValueError:
            continue
        url = str(info.get("url", ""))
        if "vcs_info" in info:
            found[name] = f"git+{url}" if not url.startswith("git+") else url
        elif "dir_info" in info or url.startswith("file:"):
            found[name] = url or "file:"
    return found
