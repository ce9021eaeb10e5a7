"""``make demo``: envkit's main job end to end, on what this machine has.

Every step is a real envkit command (through ``envkit.cli.main``) and is
printed before it runs. Findings (exit 1) are expected in some steps, e.g.
the audit of an old export; any other failure stops the demo.

1. validate and render every shipped spec;
2. when a Docker engine is reachable (otherwise say so): make a base image
   without a registry, build the CPU demo image offline from a local wheel
   directory, probe inside it and on the host, compare; pack a conda
   environment (a generated channel of real archives) and build it from the
   pack with no network;
3. probe the host twice with 1 and 2 threads and compare (verdict, causes, HTML);
4. a guarded training (envkit.guard, torch) with a planted NaN: the incident, its localization,
   its replay verdict, and two guarded runs (1 vs 2 threads) compared as probe reports;
5. snapshot the host and, when the image was built, the inside of the image; diff them (real
   drift between two real environments) and audit the image's snapshot when an advisory database
   is at hand (else say in one line how to get one).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from envkit import _proc
from envkit._atomic import write_text_atomic
from envkit.cli import main as envkit

__all__ = ["main"]

OUT = Path(".envkit/demo")
SHARED = Path(os.environ.get("ENVKIT_SHARED", "../shared"))


def step(title: str, argv: Sequence[str], *, ok: Sequence[int] = (0,)) -> int:
    print(f"\n\033[1m== {title}\033[0m\n$ envkit {' '.join(argv)}", flush=True)
    code = envkit(list(argv))
    if code not in ok:
        print(f"demo: `envkit {' '.join(argv)}` exited {code}", file=sys.stderr)
        raise SystemExit(code)
    return code


def note(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def store_host(store: Path) -> str:
    """The host directory the demo's probes wrote into ``store``."""
    return next(p.name for p in store.iterdir() if p.is_dir())


def specs_step() -> None:
    step("validate every shipped spec", ["validate"])
    for spec in sorted(Path("environments").glob("*.yaml")):
        step(f"render {spec.stem}", ["render", spec.stem])


DEMO_SPEC = """\
# The CPU demo image: Debian bookworm (made by `envkit base-image`), CPU torch, built offline.
name: demo-cpu
description: CPU torch on a debootstrapped Debian, built offline from a local wheel directory
python: "3.11"
cuda: cpu
installer: venv
base_image: envkit/debian-python:bookworm
frameworks:
  torch: "2.13.0"
pip:
  - numpy>=1.26,<3
mirrors:
  pypi: {wheels}
offline: true
"""


CONDA_SPEC = """\
# A conda environment built air-gapped: `envkit pack` on the connected side, `envkit build --pack` inside.
# No conda channel is reachable here, so the demo makes one: real archives (conda-package-handling).
name: demo-conda
description: a conda environment packed with envkit pack and built with no network
python: "3.11"
cuda: cpu
channels: [{channel}]
conda:
  - tinylib 1.2.*
base_image: envkit/debian-python:bookworm
"""


def conda_pack_step(project: Path) -> list[str]:
    """Pack the conda demo environment and build it from the pack with no network (~30 s)."""
    from envkit.offline.testing import make_real_channel, noarch_python, venv_python

    channel = (OUT / "conda-channel").resolve()
    if not (channel / "noarch" / "repodata.json").is_file():  # archives are kept: the lock pins their hashes
        shutil.rmtree(project / "images" / "demo-conda", ignore_errors=True)
        packages = [
            venv_python("3.11.2"),  # the base image's /usr/bin/python3.11, the prefix made a venv
            noarch_python("tinylib", "1.2.0", {"tinylib/__init__.py": "__version__ = '1.2.0'\n"}),
            noarch_python("tinylib", "1.3.0", {"tinylib/__init__.py": "__version__ = '1.3.0'\n"}),
        ]
        make_real_channel(channel, packages)
    write_text_atomic(
        project / "environments" / "demo-conda.yaml", CONDA_SPEC.format(channel=channel.as_uri())
    )
    pack = project / "demo-conda.envkit-pack.tar"
    step("pack the conda environment: lock, download, sha256-check, one tarball", ["pack", "demo-conda", "-o",
         str(pack)])  # fmt: skip
    step("build it from the pack (py-rattler installs the explicit lock; the build has no network)",
         ["build", "demo-conda", "--pack", str(pack), "--frozen"])  # fmt: skip
    snapshot = OUT / "snapshot-demo-conda.json"
    step("snapshot inside the image: the locked conda packages", ["snapshot", "--image", "demo-conda", "-o",
         str(snapshot)])  # fmt: skip
    return [str(pack), str(snapshot)]


def docker_reachable() -> bool:
    try:
        from envkit.engine.docker_api import DockerEngine

        DockerEngine(timeout=5).images("io.envkit.name")
    except Exception:  # noqa: BLE001 - any failure means "no engine"
        return False
    return True


def image_step() -> list[str]:
    if not docker_reachable():
        note("no Docker engine reachable (start dockerd or set DOCKER_HOST): probing the host only")
        return []
    step("make a base image without a registry (debootstrap, once: a few minutes)", ["base-image"])
    wheels = (OUT / "wheels").resolve()
    note(f"fill a local wheel directory through your pip configuration: {wheels}")
    _proc.run(
        [sys.executable, "-m", "pip", "download", "--dest", str(wheels), "--only-binary=:all:",
         "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", "--disable-pip-version-check",
         "--progress-bar", "off", "torch==2.13.0+cpu", "numpy>=1.26,<3"],
        timeout=1800,
        hint="the torch CPU wheel comes through pip's configuration: e.g. PIP_EXTRA_INDEX_URL="
        "https://download.pytorch.org/whl/cpu",
    )  # fmt: skip
    project = (OUT / "project").resolve()
    write_text_atomic(project / "environments" / "demo-cpu.yaml", DEMO_SPEC.format(wheels=wheels.as_uri()))
    reports = str((OUT / "reports").resolve())
    probe = [
        "--frameworks",
        "torch",
        "--workloads",
        "rnn,bert",
        "--steps",
        "5",
        "--threads",
        "1",
        "--store",
        reports,
    ]
    os.environ.update(ENVKIT_ROOT=str(project), ENVKIT_FIND_LINKS=str(wheels))
    try:
        step(f"build the CPU demo image offline (project {project})", ["build", "demo-cpu", "--offline"])
        step("probe inside the image", ["probe", "--image", "demo-cpu", *probe, "--label", "image"])
        conda_outputs = conda_pack_step(project)
        step("list the images", ["images"])
    finally:
        del os.environ["ENVKIT_ROOT"]
    step("probe the host the same way", ["probe", *probe, "--label", "host"])
    host = store_host(Path(reports))
    html = OUT / "compare-image-host.html"
    step(
        "compare the image with the host",
        ["probe", "--compare", f"{host}/image", f"{host}/host", "--store", reports, "--html", str(html)],
        ok=(0, 1),
    )
    return [str(project / "images" / "demo-cpu"), str(html), *conda_outputs]


def probe_step() -> list[str]:
    reports = OUT / "reports"
    common = ["--workloads", "rnn,bert", "--steps", "5", "--store", str(reports)]
    step("probe this host, 1 thread", ["probe", *common, "--label", "threads-1", "--threads", "1"])
    step("probe this host, 2 threads", ["probe", *common, "--label", "threads-2", "--threads", "2"])
    host = store_host(reports)
    html = OUT / "compare-threads.html"
    step(
        "compare the two runs: verdict per framework, workload and metric, and the likely causes",
        [
            "probe",
            "--compare",
            f"{host}/threads-1",
            f"{host}/threads-2",
            "--store",
            str(reports),
            "--html",
            str(html),
        ],
        ok=(0, 1),
    )
    return [str(reports), str(html)]


def guard_step() -> list[str]:
    if importlib.util.find_spec("torch") is None:
        note("torch is not installed: no guarded training (pip install torch)")
        return []
    import warnings

    from envkit.guard import example

    runs = OUT / "guard"
    note("a guarded training (torch, CPU): step 3's batch is an unnormalized outlier")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        example.train(runs / "nan", bad_at=3)
    step(
        "what the guard saw: the skipped step, its dump and localization",
        ["guard", "show", str(runs / "nan")],
        ok=(1,),
    )
    dump = runs / "nan" / "incidents" / "step-3"
    step(
        "replay the incident's step from its dump",
        ["guard", "replay", str(dump), "--entry", "envkit.guard.example:build"],
    )
    for n in (1, 2):
        example.train(runs / f"threads-{n}", threads=n)
    reports = [str(runs / f"threads-{n}" / "report.json") for n in (1, 2)]
    step(
        "compare two guarded runs (1 vs 2 threads) as probe reports",
        ["probe", "--compare", *reports],
        ok=(0, 1),
    )
    return [str(runs)]


def demo_image() -> str | None:
    """The demo image ``image_step`` built (an envkit image named demo-*), or None."""
    if not docker_reachable():
        return None
    from envkit.engine.docker_api import DockerEngine

    names = {i.labels.get("io.envkit.name", "") for i in DockerEngine(timeout=5).images("io.envkit.name")}
    demos = sorted(n for n in names if n.startswith("demo"))
    return "demo-cpu" if "demo-cpu" in demos else (demos[0] if demos else None)


def advisory_db() -> Path | None:
    """An advisory database at hand: $ENVKIT_ADVISORY_DB, the default cache, or ../shared's."""
    from envkit.cli.audit_cmd import default_db

    given = os.environ.get("ENVKIT_ADVISORY_DB")
    for candidate in (Path(given) if given else None, default_db(), SHARED / "advisory-db"):
        if candidate is not None and (candidate / "vulns").is_dir():
            return candidate
    return None


def inventory_step() -> list[str]:
    """Diff what the demo has at hand: a snapshot taken inside the image it built against this host's;
    audit it when an advisory database is there."""
    snapshot = OUT / "snapshot.json"
    step("snapshot this environment", ["snapshot", "-o", str(snapshot), "--store", str(OUT / "snapshots")])
    outputs = [str(snapshot)]
    image = demo_image()
    target = snapshot
    if image is not None:
        inside = OUT / "snapshot-image.json"
        step(f"snapshot inside the image {image}", ["snapshot", "--image", image, "-o", str(inside)])
        step(
            "diff the image against this host: drift between two real environments",
            ["diff", str(inside), str(snapshot)],
            ok=(0, 1),
        )
        outputs.append(str(inside))
        target = inside
    else:
        inventories = SHARED / "inventories"
        old, new = inventories / "envexport-paris-444fb8e.yml", inventories / "envexport-paris-aec6a0f.yml"
        if old.is_file() and new.is_file():
            step(
                "diff two real exports of one project, taken a week apart",
                ["diff", str(old), str(new)],
                ok=(0, 1),
            )
            target = old
        else:
            note("no demo image (no Docker engine) and no ../shared: nothing to diff this host against")
    database = advisory_db()
    if database is None:
        note(
            "no advisory database: `envkit audit --update-db` downloads the OSV PyPI export (or use --db DIR)"
        )
        return outputs
    sarif = OUT / "audit.sarif"
    step(
        f"audit {target.name} against the advisory database {database} (offline)",
        ["audit", str(target), "--db", str(database), "--fail-on", "high"],
        ok=(0, 1),
    )
    step(
        "the same audit as SARIF",
        ["audit", str(target), "--db", str(database), "--format", "sarif", "-o", str(sarif)],
        ok=(0, 1),
    )
    return [*outputs, str(sarif)]


def main(steps: Sequence[Callable[[], list[str] | None]] | None = None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    outputs: list[str] = []
    for run in steps or (specs_step, image_step, probe_step, guard_step, inventory_step):
        outputs += run() or []
    print("\n\033[1mdemo: done.\033[0m Generated build contexts: images/. Reports:")
    for path in outputs:
        print(f"  {path}")


if __name__ == "__main__":
    main()
