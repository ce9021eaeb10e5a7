"""``envkit audit``: known vulnerabilities and environment policy."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envkit._atomic import write_text_atomic
from envkit._safe import redact
from envkit.audit.data_age import DEFAULT_MAX_AGE_DAYS
from envkit.audit.findings import AuditReport
from envkit.audit.osv_dir import OSV_PYPI_URL
from envkit.audit.report import FORMATS, render
from envkit.audit.service import SEVERITIES, VulnService
from envkit.audit.targets import AuditRequest, audit_environment, audit_file, audit_image
from envkit.cli import cli
from envkit.cli._app import (
    command,
    lock_environment_option,
    lock_python_option,
    project_root,
    services,
    shown,
    working,
)
from envkit.errors import UsageError
from envkit.inventory.selector import split_selector
from envkit.result import CommandResult

if TYPE_CHECKING:  # the spec's pydantic models load only when a spec is audited (NAME or --spec)
    from envkit.spec.load import LoadedSpec

__all__ = ["audit"]

_DEFAULT = "__default__"


def default_db() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "envkit" / "advisory-db"


def _service(db: Path | None, online: bool) -> VulnService:
    path = db or default_db()
    if not online and db is None and not path.is_dir():
        raise UsageError(
            "no advisory database: pass --db DIR or fetch one",
            hint="envkit audit --update-db (online), or --db a checkout of github.com/pypa/advisory-database",
        )
    return services().vuln_service(path, online)


def _is_env_name(target: str) -> bool:
    path = Path(split_selector(target).name)
    if path.is_file():
        return path.parent.name == "environments" and path.suffix in (".yaml", ".yml")
    return True


def _load(name: str, root: Path) -> LoadedSpec:
    from envkit.spec.load import load_spec, resolve_spec_path

    return load_spec(resolve_spec_path(name, root))


def _image_dir(root: Path, loaded: LoadedSpec) -> Path:
    from envkit.spec.load import image_dir

    return image_dir(root, loaded.spec.name)


def _run(
    target: str | None,
    image: str | None,
    spec_name: str | None,
    request: AuditRequest,
    choice: tuple[str | None, str | None, str | None] = (None, None, None),
) -> AuditReport:
    root = project_root()
    loaded: LoadedSpec | None = None
    if spec_name:
        loaded = _load(spec_name, root)
    if image:
        folder = _image_dir(root, loaded) if loaded else None
        return audit_image(services().engine(), image, request, loaded=loaded, image_dir=folder)
    if target is None:
        raise UsageError("nothing to audit", hint="envkit audit NAME | FILE | --image IMAGE (see --help)")
    if _is_env_name(target):
        loaded = _load(target, root)
        return audit_environment(loaded, _image_dir(root, loaded), request)
    platform, environment, python = choice
    chosen = split_selector(target)  # FILE#ENVIRONMENT@PLATFORM
    return audit_file(
        Path(chosen.name),
        request,
        loaded=loaded,
        platform=chosen.platform or platform,
        environment=chosen.environment or environment,
        python=python,
    )


def _update(directory: str) -> CommandResult:
    from envkit.audit.update_db import update_db  # zipfile and the unpacking: only for --update-db

    path = default_db() if directory == _DEFAULT else Path(directory)
    meta = update_db(path, services().fetcher())  # the one Fetcher (urllib: proxies from the environment)
    data: dict[str, object] = {"directory": str(path), **meta}
    return CommandResult("audit", data, f"updated {path}: {meta['records']} records from {OSV_PYPI_URL}")


@command(cli, "audit")
@click.argument("target", required=False, metavar="[NAME|FILE]")
@click.option(
    "--image", help="Audit a built image: its pip inventory (taken inside a container) and metadata."
)
@click.option(
    "--spec", "spec_name", metavar="NAME", help="Spec whose ignores and policy apply to a FILE or --image."
)
@click.option(
    "--db",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="ENVKIT_ADVISORY_DB",
    help="OSV advisory directory (vulns/<package>/<ID>.yaml). Default: ~/.cache/envkit/advisory-db.",
)
@click.option(
    "--online", is_flag=True, help="Ask OSV (api.osv.dev) through pip-audit instead of a local --db."
)
@click.option(
    "--driver", metavar="VERSION", help="NVIDIA driver to check the CUDA minimum against, e.g. 525.60.13."
)
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to FILE (atomic).",
)
@click.option(
    "--fail-on",
    type=click.Choice(SEVERITIES),
    default="low",
    show_default=True,
    help="Exit 1 when a finding at or above this severity remains (unknown severity counts as medium).",
)
@click.option(
    "--platform",
    metavar="SUBDIR",
    help="Platform to read from a multi-platform lock (conda-lock.yml, pixi.lock, uv.lock, pylock.toml, "
    "poetry.lock), e.g. linux-64, osx-arm64, win-64. Default: this machine's.",
)
@lock_environment_option
@lock_python_option
@click.option(
    "--max-db-age",
    type=click.IntRange(min=-1),
    default=DEFAULT_MAX_AGE_DAYS,
    show_default=True,
    envvar="ENVKIT_MAX_DB_AGE",
    metavar="DAYS",
    help="Warn when the advisory data (its date: SOURCE.json, README or newest record) is older than "
    "DAYS; -1: never.",
)
@click.option(
    "--update-db",
    "update_dir",
    is_flag=False,
    flag_value=_DEFAULT,
    default=None,
    metavar="[DIR]",
    help=f"Download the OSV PyPI export ({OSV_PYPI_URL}) into DIR (default cache) and exit.",
)
def audit(
    target: str | None,
    image: str | None,
    spec_name: str | None,
    db: Path | None,
    online: bool,
    driver: str | None,
    fmt: str,
    output: Path | None,
    fail_on: str,
    platform: str | None,
    environment: str | None,
    python_minor: str | None,
    max_db_age: int,
    update_dir: str | None,
) -> CommandResult:
    """Check an environment for known vulnerabilities and policy problems.

    TARGET is an environment name (its lock files in images/NAME/ and its spec), or any
    inventory file (pip freeze, requirements/lock, conda env export, pip list JSON);
    --image IMAGE audits a built image. Advisories come from an offline OSV directory
    (--db) or, with --online, from OSV through pip-audit. Packages a service could not
    check are listed as "not checked"; conda-only packages (openssl, cudnn, ...) as "not
    covered": neither is ever reported clean. Ignores live in the spec
    (audit: ignore: [{id, reason}]) and stay visible in the output.

    Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 usage, 3 database or
    service failure (including a corrupted advisory record).
    """
    if update_dir is not None:
        return _update(update_dir)
    from envkit.catalog import CatalogOnDemand

    request = AuditRequest(
        service=_service(db, online),
        catalog=CatalogOnDemand(),
        today=date.today(),
        driver=driver,
        max_db_age=None if max_db_age < 0 else max_db_age,
    )
    with working(f"auditing {target or image}"):
        report = _run(target, image, spec_name, request, (platform, environment, python_minor))
    rendered = render(report, fmt, fail_on)
    if output is not None:
        # a written report is shared and read in terminals too: no credentials, no control characters
        write_text_atomic(output, shown(rendered) if fmt in ("table", "markdown") else redact(rendered))
        text = render(report, "table", fail_on).rstrip("\n") + f"\nwrote {output} ({fmt})"
    else:
        text = rendered.rstrip("\n")
    return CommandResult(
        "audit", report.to_json(fail_on), text, exit_code=report.exit_code(fail_on), warnings=report.warnings
    )
