"""``envkit catalog`` (what envkit knows) and ``envkit catalog refresh`` (rebuild it from the indexes)."""

from __future__ import annotations

import datetime as dt
from importlib import resources
from itertools import groupby
from pathlib import Path

import click
from packaging.version import Version

from envkit.catalog import Catalog, FrameworkRelease, load_catalog
from envkit.catalog.conda_pypi import MAPPING_FILE, load_mapping
from envkit.catalog.refresh import (
    HttpPages,
    PageSource,
    PageUnreachable,
    RecordedPages,
    Recorder,
    recording_trim,
    refresh_outcome,
)
from envkit.catalog.refresh.conda_pypi import MAPPING_URL, FilePages, refresh_names
from envkit.cli import cli
from envkit.cli._app import command, json_option, run_result, working
from envkit.errors import ExitCode, UsageError
from envkit.result import CommandResult

SECTIONS = ["cuda", "frameworks", "images", "installers", "rules"]


@cli.group("catalog", invoke_without_command=True)
@click.option("--section", type=click.Choice(SECTIONS), help="Show one section only.")
@json_option
@click.pass_context
def catalog_cmd(ctx: click.Context, section: str | None, as_json: bool) -> int | None:
    """Print what envkit knows: CUDA releases, framework wheels, base images, installers, rules.

    Every fact carries its source; unverified facts are marked with `?`. Patch releases of one
    minor with the same Pythons and CUDA flavours share a line. `envkit catalog refresh`
    rebuilds the framework part from the real indexes.
    """
    if ctx.invoked_subcommand is not None:
        return None
    return run_result("catalog", lambda: _view(load_catalog(), section), as_json=as_json)


def _view(cat: Catalog, section: str | None) -> CommandResult:
    data: dict[str, object] = {
        "cuda": [c.model_dump() for c in cat.cuda],
        "frameworks": {k: v.model_dump() for k, v in cat.frameworks.items()},
        "images": [b.model_dump() for b in cat.base_images],
        "installers": [i.model_dump() for i in cat.installers],
        "rules": [r.to_json() for r in cat.known_bad],
    }
    if section:
        data = {section: data[section]}
    if "installers" in data:  # what reads envkit's explicit lock, and what offline builds install with
        data["explicit_hashes"] = [h.model_dump() for h in cat.explicit_hashes]
        data["offline_installers"] = [i.model_dump() for i in cat.offline_installers]

    def text() -> str:
        lines: list[str] = []
        mark = {True: " ", False: "?"}
        if "cuda" in data:
            lines.append("CUDA (min driver / compat driver / cuDNN)   ? = unverified")
            lines += [
                f" {mark[c.verified]} {c.version:<5} {c.min_driver:<10} {c.compat_driver:<10} "
                + ", ".join(c.cudnn)
                for c in cat.cuda
            ]
        if "frameworks" in data:
            lines.append("frameworks   ? = unverified, * = CUDA flavours from the hand-checked fallback")
            for fw, family in cat.frameworks.items():
                lines.append(f"{fw}  ({len(family.releases)} releases)")
                lines += _framework_lines(family.releases)
        if "images" in data:
            lines.append("base images")
            lines += [f" {mark[b.verified]} {b.ref}" for b in cat.base_images]
        if "installers" in data:
            ran = sorted({v for h in cat.explicit_hashes for v in h.executed}, key=Version)
            lines.append(
                "installers (sha256 verified in the Dockerfile; no installer itself was run by envkit's"
            )
            lines.append(f"  tests, only conda {', '.join(ran) or 'none'} built from source)")
            lines += [f" {mark[i.verified]} {i.url}  {i.sha256[:12]}  ({i.tool} {i.tool_version})"
                      for i in cat.installers]  # fmt: skip
            lines.append("explicit lock hashes (url#HASH), read from   ? = unverified, not executed")
            lines += [f" {mark[h.verified]} {h.hash:<6} {h.tool} >= {h.since}  {_executed(h.executed)}"
                      for h in cat.explicit_hashes]  # fmt: skip
            lines.append("offline conda installer (envkit pack, build --offline)")
            lines += [f" {mark[i.verified]} {i.filename}  {i.sha256[:12]}" for i in cat.offline_installers]
        if "rules" in data:
            lines.append("known-bad combinations")
            lines += [f"   {r.id}: {r.when}  ({r.severity})" for r in cat.known_bad]
        return "\n".join(lines)

    return CommandResult("catalog", data, text, exit_code=ExitCode.OK)


def _executed(versions: tuple[str, ...]) -> str:
    return f"(executed with {', '.join(versions)})" if versions else "(not executed)"


def _flavours(release: FrameworkRelease) -> str:
    return ", ".join(w.cuda + ("(exp)" if w.experimental else "") for w in release.wheels)


def _pythons(release: FrameworkRelease) -> str:
    p = release.python
    return p[0] if len(p) == 1 else f"{p[0]}-{p[-1]}"


def _framework_lines(releases: tuple[FrameworkRelease, ...]) -> list[str]:
    """One line per minor; patch releases with the same Pythons and flavours share it."""
    lines = []

    def key(r: FrameworkRelease) -> tuple[object, ...]:
        v = Version(r.version)
        return (v.release[:2], _pythons(r), _flavours(r), r.verified, r.flavours, r.yanked)

    for (_, pythons, flavours, verified, source, yanked), group in groupby(releases, key=key):
        versions = ", ".join(r.version for r in group)
        flags = ("*" if source == "fallback" else " ") + (" yanked" if yanked else "")
        lines.append(
            f" {' ' if verified else '?'}{flags} {versions:<22} python {pythons:<10} wheels: {flavours}"
        )
    return lines


def _shipped_file() -> Path:
    return Path(str(resources.files("envkit.catalog").joinpath("data").joinpath("frameworks.yaml")))


@command(catalog_cmd, "refresh")
@click.option(
    "--offline", is_flag=True, help="Do not use the network: keep the shipped data (or read --pages)."
)
@click.option(
    "--pages",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Read recorded pages from this directory instead of the network.",
)
@click.option(
    "--record",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep every page read (trimmed) in this directory, with url, date and sha256.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (default: the shipped envkit/catalog/data/frameworks.yaml).",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when the file would change.")
@click.option("--strict", is_flag=True, help="Fail (exit 3) when a framework index cannot be read.")
def refresh_cmd(
    offline: bool, pages: Path | None, record: Path | None, output: Path | None, check: bool, strict: bool
) -> CommandResult:
    """Rebuild the torch and Paddle releases of the catalog from PyPI and the framework indexes.

    PyPI's JSON API and the wheels' metadata give the releases, Python tags, yanked flags and
    the CUDA of the default wheel; download.pytorch.org and paddlepaddle.org.cn give the CUDA
    flavours. An index that cannot be read falls back to the hand-checked table
    (framework_flavours.yaml) and its releases are marked. Without network (or with
    --offline and no --pages) the shipped data is kept. Same pages, same bytes.
    """
    target = output or _shipped_file()
    if offline and pages is None:
        return _kept(target, "--offline: kept the shipped catalog")
    source: PageSource = RecordedPages(pages) if pages else HttpPages()
    recorder = None
    if record is not None:
        recorder = Recorder(source, record, recording_trim(), _today())
        source = recorder
    try:
        with working("reading PyPI and the framework indexes"):
            outcome = refresh_outcome(source, target, check=check, strict=strict)
    except PageUnreachable as e:
        if pages is not None or "pypi.org" not in e.url:
            raise
        return _kept(target, f"no network ({e.reason}): kept the shipped catalog")
    finally:
        if recorder is not None:
            recorder.save()
    exit_code = ExitCode.FINDINGS if check and outcome.changed else ExitCode.OK
    return CommandResult("catalog refresh", outcome.to_json(), outcome.summary, exit_code, outcome.warnings)


def _today() -> str:
    return dt.date.today().isoformat()


def _kept(target: Path, reason: str) -> CommandResult:
    releases = {k: [r.version for r in v.releases] for k, v in load_catalog().frameworks.items()}
    data = {"output": str(target), "changed": False, "kept": True, "releases": releases}
    counts = ", ".join(f"{len(v)} {k}" for k, v in releases.items())
    return CommandResult("catalog refresh", data, f"kept {counts} releases", warnings=[reason])


@command(catalog_cmd, "refresh-names")
@click.option("--offline", is_flag=True, help="Do not use the network: keep the shipped mapping.")
@click.option(
    "--file",
    "from_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Read a downloaded copy of the mapping from this file instead of the network.",
)
@click.option("--url", help=f"Where to download the mapping (default: {MAPPING_URL}).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"File to write (default: the shipped envkit/catalog/data/{MAPPING_FILE}); its record beside it.",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when the file would change.")
def refresh_names_cmd(
    offline: bool, from_file: Path | None, url: str | None, output: Path | None, check: bool
) -> CommandResult:
    """Download the conda-forge -> PyPI name mapping (prefix.dev's parselmouth, the one pixi uses).

    The download is checked whole (a JSON object of conda names, each a PyPI name or null; bounded
    in size and entries) before anything is written; the file is written gzipped and atomically,
    with its URL, day and sha256 beside it. envkit/inventory/data/names.yaml stays the override.
    """
    target = output or Path(str(resources.files("envkit.catalog").joinpath("data").joinpath(MAPPING_FILE)))
    if offline and from_file is None:
        return _kept_names(target, "--offline: kept the shipped mapping")
    if from_file is not None and url is not None:
        raise UsageError(
            "--file and --url: choose one", hint="--file reads a copy you downloaded; --url downloads"
        )
    url = url or MAPPING_URL
    if not url.startswith("https://"):
        raise UsageError(f"--url {url[:100]!r}: not an https:// URL", hint="download a copy and use --file")
    source: PageSource = FilePages(from_file, _today()) if from_file else HttpPages()
    try:
        with working("reading the conda-forge -> PyPI mapping"):
            outcome = refresh_names(source, target, url=str(from_file) if from_file else url, check=check)
    except PageUnreachable as e:
        return _kept_names(target, f"cannot read {e.url} ({e.reason}): kept the shipped mapping")
    exit_code = ExitCode.FINDINGS if check and outcome.changed else ExitCode.OK
    return CommandResult("catalog refresh-names", outcome.to_json(), outcome.summary, exit_code)


def _kept_names(target: Path, reason: str) -> CommandResult:
    data = {"output": str(target), "changed": False, "kept": True, "entries": len(load_mapping())}
    return CommandResult(
        "catalog refresh-names", data, f"kept {data['entries']} conda names", warnings=[reason]
    )
