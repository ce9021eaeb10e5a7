"""``envkit init``: set up a team repository (starter spec, envkit.mk, CI recipe)."""

from __future__ import annotations

from typing import Literal, cast

import click

from envkit.cli import cli
from envkit.cli._app import command, project_root
from envkit.errors import UsageError
from envkit.init import CI_TARGETS, FRAMEWORKS, InitResult, init_repo
from envkit.result import CommandResult


@command(cli, "init")
@click.option(
    "--framework", type=click.Choice(FRAMEWORKS), help="Framework of the starter spec [default: torch]."
)
@click.option(
    "--cuda", metavar="X.Y|cpu", help="CUDA of the starter spec [default: newest the catalog can build]."
)
@click.option("--python", metavar="3.X", help="Python minor version [default: 3.11 where supported].")
@click.option("--name", metavar="NAME", help="Environment name [default: e.g. cuda12.4-torch2.5].")
@click.option(
    "--ci", type=click.Choice(sorted(CI_TARGETS)), help="Also write a CI recipe that runs `make env-check`."
)
@click.option(
    "--force", is_flag=True, help="Replace generated files that exist and differ (never the Makefile)."
)
@click.option(
    "--envkit-source",
    metavar="URL",
    help="Where the recipes install envkit from: git+https://HOST/ORG/envkit@COMMIT (40 hex) or "
    "https://.../envkit_dl-VER-py3-none-any.whl#sha256=HEX [default: this installation's own source].",
)
@click.option(
    "--from",
    "from_source",
    metavar="SOURCE",
    help="Adopt what you have: environment.yml, requirements.txt, a conda list / pip freeze or any "
    "inventory `envkit diff` reads, a lock, a Dockerfile, image:REF or host (docs/guides/init.md).",
)
@click.option(
    "--lock", "lock_now", is_flag=True, help="With --from: lock at once and compare with the source."
)
@click.option(
    "--keep-defaults",
    is_flag=True,
    help="With --from: keep Anaconda's defaults channel (licence terms apply).",
)
@click.option(
    "--environment",
    metavar="NAME",
    help="With --from pixi.toml: the environment to adopt [default: default].",
)
def init(
    framework: str | None,
    cuda: str | None,
    python: str | None,
    name: str | None,
    ci: str | None,
    force: bool,
    envkit_source: str | None,
    from_source: str | None,
    lock_now: bool,
    keep_defaults: bool,
    environment: str | None,
) -> CommandResult:
    """Give this repository envkit: a starter spec, `make env-*` targets and a CI recipe.

    Writes environments/NAME.yaml (framework, CUDA and Python chosen from the
    catalog), envkit.mk (targets env-lock, env-build, env-probe, env-baseline,
    env-compare, env-snapshot, env-diff, env-audit, env-check; `make env-help`)
    and appends `include envkit.mk` to the Makefile (creating one if needed).
    With --ci github it writes .github/workflows/envkit.yml; with --ci gitlab,
    .gitlab-ci-envkit.yml to include from .gitlab-ci.yml.

    Existing files are never clobbered: a file that differs is kept with a
    warning unless --force; running init again changes nothing. The project
    root is the current directory or $ENVKIT_ROOT. Exits 2 for a CUDA or
    Python the catalog has no wheels for (the hint lists valid ones).

    The recipes install envkit (distribution envkit-dl) from a pinned source, never by
    name (`envkit` on PyPI is an unrelated project): a git URL at a commit or a wheel
    URL with its sha256 (`make env-install`). With --ci, exits 2 when no pinned source
    is given and this installation's own cannot be told.

    With --from SOURCE it writes only environments/NAME.yaml, adopted from what the
    team has (--cuda/--python override what was detected), lists what it could not
    carry and why, and never replaces an existing spec; --lock locks it at once and
    prints `envkit diff SOURCE images/NAME/conda-lock.yml`.
    """
    _refuse_mixed(
        from_source is not None,
        starter=bool(framework or ci or force),
        adopt=bool(lock_now or keep_defaults or environment),
    )
    if from_source is not None:
        from envkit.cli.init_from import adopt_command

        return adopt_command(from_source, name=name, cuda=cuda, python=python, lock=lock_now,
                             keep_defaults=keep_defaults, environment=environment)  # fmt: skip
    result = init_repo(
        project_root(),
        framework,
        cuda,
        python,
        name=name,
        ci=cast("Literal['github', 'gitlab'] | None", ci),
        force=force,
        source=envkit_source,
    )
    return CommandResult("init", result.to_json(), lambda: _text(result), warnings=result.warnings)


def _refuse_mixed(adopting: bool, *, starter: bool, adopt: bool) -> None:
    """Usage errors: a starter's options with ``--from``, or ``--from``'s options without it."""
    if adopting and starter:
        raise UsageError(
            "--framework, --ci and --force do not apply with --from",
            hint="envkit init --from SOURCE [--name N] [--cuda X.Y] [--python 3.X] [--lock]",
        )
    if not adopting and adopt:
        raise UsageError(
            "--lock, --keep-defaults and --environment apply with --from only",
            hint="envkit init --from SOURCE --lock",
        )


def _text(result: InitResult) -> str:
    c = result.choice
    flavour = "cpu" if c.cuda == "cpu" else f"CUDA {c.cuda}"
    lines = [f"environment {c.name}: {c.framework} {c.version}, {flavour}, Python {c.python}"]
    lines += [f"  {f.status:<11} {f.path}" + (f"  ({f.note})" if f.note else "") for f in result.files]
    if not result.changed:
        lines.append("unchanged: nothing to do")
    else:
        lines.append(f"next: envkit validate {c.name}; make env-lock; make env-help")
    return "\n".join(lines)
