"""``envkit verify``: is this image what the committed lock builds? (composition root)."""

from __future__ import annotations

from pathlib import Path

import click

from envkit._safe import one_line
from envkit.build.builder import NAME_LABEL, BuildOptions, image_repo
from envkit.catalog import load_catalog
from envkit.cli import cli
from envkit.cli._app import command, project_root, services, working
from envkit.cli.build_cmd import find_links_from_env
from envkit.errors import ExitCode, UsageError
from envkit.reproduce.layers import LayerEntry
from envkit.result import CommandResult, Lines
from envkit.spec.load import SPEC_DIR, load_spec
from envkit.spec.models import NAME_RE
from envkit.verify.image import VerifyResult, verify_image

__all__ = ["verify"]

_SHOWN = 20
_WIDTH = 160
_MAX_NAME = 200  # a spec name is a file name (255 bytes at most with .yaml)


@command(cli, "verify")
@click.argument("target", metavar="NAME|IMAGE")
@click.option(
    "--pack", "pack", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
    help="Rebuild a conda environment from this pack (as `envkit build --pack`).",
)  # fmt: skip
def verify(target: str, pack: Path | None) -> CommandResult:
    """Rebuild an image from its committed lock with --no-cache and compare digests, file by file.

    NAME verifies envkit/NAME:latest; IMAGE (a tag or id) verifies that image, whose
    io.envkit.name label names its spec: a name of this project's environments/, never a path.
    The rebuild uses the committed lock (as --frozen) and the image's own offline setting. Equal
    image IDs: exit 0. Otherwise exit 1, naming what differs layer by layer (diff_id) and file by
    file (path, size, sha256, mode, owner, mtime), and diffoscope's report on the first differing
    files when diffoscope is installed. No tag moves, the verified image's nor the project's: the
    rebuild is tagged envkit/NAME:rebuilt only. The SBOM beside the lock
    (images/NAME/sbom.cdx.json) and the image's provenance (.envkit/provenance/) are checked
    against the image and the lock too: a mismatch is a finding (exit 1).
    """
    root = project_root()
    engine, store = services().engine_and_store("envkit verify")
    image = target
    info = engine.inspect(target)
    if info is None and NAME_RE.match(target):
        image = f"{image_repo(target)}:latest"
        info = engine.inspect(image)
    if info is None:
        raise UsageError(f"no image {target} (nor {image}) in the engine",
                         hint=f"build it first: envkit build {target}")  # fmt: skip
    name = info.labels.get(NAME_LABEL)
    if not name:
        raise UsageError(f"{image} has no {NAME_LABEL} label: it was not built by envkit",
                         hint="verify an image built with `envkit build`")  # fmt: skip
    catalog = load_catalog()
    loaded = load_spec(_project_spec(name, image, root), catalog)
    options = BuildOptions(
        offline=info.labels.get("io.envkit.offline") == "true" or pack is not None,
        find_links=find_links_from_env(), pack=pack.resolve() if pack else None,
    )  # fmt: skip
    with working(f"rebuilding {name} from its lock (--no-cache)"):
        result = verify_image(services().builder(root), store, loaded, image, options)
    code = ExitCode.OK if result.ok else ExitCode.FINDINGS
    return CommandResult("verify", result.to_json(), lambda: _text(result), code)


def _project_spec(name: str, image: str, root: Path) -> Path:
    """``environments/NAME.yaml`` of this project for the image's label: a name, never a path.

    The image may be anyone's (verifying images others built is what verify is for), so its label
    only chooses among the project's own specs; ``../x``, ``/tmp/x.yaml`` or ``x.yaml`` is refused.
    """
    if not NAME_RE.match(name) or len(name) > _MAX_NAME:
        raise UsageError(
            f"{image}: its {NAME_LABEL} label {one_line(name)[:80]!r} is not an environment name "
            f"(names match [a-z0-9][a-z0-9._-]*, at most {_MAX_NAME} characters): envkit reads "
            "the spec from the project, never from a path an image names",
            hint="verify images built by `envkit build` from this project's environments/",
        )
    path = root / SPEC_DIR / f"{name}.yaml"
    if not path.is_file():
        raise UsageError(
            f"{image} names the environment {name}, which this project has no spec for "
            f"({SPEC_DIR}/{name}.yaml)",
            hint="run envkit verify in the project that built it",
        )
    return path


def _text(result: VerifyResult) -> Lines:
    notes = [f"  finding: {f}" for f in result.findings]
    if result.equal:
        return [f"{result.image}: reproduced (image {result.image_id} = rebuild from the lock)", *notes]
    lines = [*notes, f"{result.image}: NOT reproduced: image {result.image_id}, rebuild {result.rebuilt_id} "
             f"(tagged {result.rebuilt_tag})"]  # fmt: skip
    if result.image_lock_sha256 != result.lock_sha256:
        lines.append(f"  the image was built from lock {result.image_lock_sha256}; the committed lock is "
                     f"{result.lock_sha256}")  # fmt: skip
    diff = result.diff
    if diff is not None:
        for change in diff.files[:_SHOWN]:
            a, b = change.image, change.rebuilt
            what = ", ".join(f"{f} {_field(a, f)} != {_field(b, f)}" for f in change.fields)
            lines.append(f"  file {change.path}: {change.change}" + (f" ({what})" if what else ""))
        if len(diff.files) > _SHOWN or diff.more_files:
            lines.append(f"  ... {len(diff.files) - _SHOWN + diff.more_files} more files")
        lines.extend(
            f"  layer {layer.index}: image {layer.image or '-'} rebuild {layer.rebuilt or '-'} "
            f"({len(layer.entries) + layer.more} entries differ)"
            for layer in diff.layers
        )
        lines.extend(f"  {c[:_WIDTH]}{'...' if len(c) > _WIDTH else ''}" for c in diff.config[:_SHOWN])
    for report in result.diffoscope:
        lines.append(f"diffoscope {report.path}:")
        lines.extend(f"  {line}" for line in report.output.splitlines())
    if result.diffoscope_missing:
        lines.append(
            "diffoscope is not installed: no byte-level report of the differing files "
            "(install it: apt-get install diffoscope-minimal, or pip install diffoscope)"
        )
    return lines


def _field(entry: LayerEntry | None, name: str) -> str:
    if entry is None:
        return "-"
    value = getattr(entry, name)
    return f"{value:04o}" if name == "mode" else str(value or "''")
