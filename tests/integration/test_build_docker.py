"""``envkit build`` against a real Docker engine (marker ``docker``).

No registry is reachable: a session fixture debootstraps a minimal Debian with
python3 + venv and ``docker import``s it as ``envkit/debian-python:bookworm``
(skipped when that image exists). Specs live in a temporary project root.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.comparison.pairwise import compare_reports
from envkit.engine.docker_api import DockerEngine
from envkit.engine.protocol import LAYER_LABEL
from envkit.lock import current_lock
from envkit.probe.report import load_report
from envkit.probe.runner import ProbeOptions, run_on_host
from envkit.spec.load import load_spec
from tests.integration.conftest import debian_base, downloaded_wheels, remove_images_of

pytestmark = pytest.mark.docker

BASE = "envkit/debian-python:bookworm"
RUN = os.getpid()  # image names unique per test run: one dockerd serves every checkout


@pytest.fixture(scope="session")
def engine() -> DockerEngine:
    return DockerEngine()


@pytest.fixture(scope="session")
def base_image(engine: DockerEngine) -> str:
    """The local base image, made once by envkit itself (debootstrap + import, a few minutes)."""
    return debian_base(engine)


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory, engine: DockerEngine) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("project")
    (root / "environments").mkdir()
    yield root
    names = {info.labels.get("io.envkit.name", "") for info in engine.images("io.envkit.name")}
    for name in sorted(n for n in names if n.startswith(f"itest{RUN}-")):
        remove_images_of(engine, name)


def _spec(root: Path, name: str, base: str, pins: list[str], extra: str = "") -> None:
    lines = "".join(f"  - {p}\n" for p in pins)
    text = (
        f'name: {name}\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: {base}\n{extra}pip:\n{lines}'
    )
    (root / "environments" / f"{name}.yaml").write_text(text)


def _build(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    code = main(["build", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def _tags(engine: DockerEngine, name: str) -> set[str]:
    return {t for i in engine.images(f"io.envkit.name={name}") for t in i.tags}


def _dangling_builders(engine: DockerEngine, name: str) -> list[str]:
    """Untagged builder-stage images of ``name`` that a build left behind (there must be none), its
    layer stages aside: those stay as the next build's cache (``io.envkit.layer-stage``,
    docs/concepts/design.md)."""
    filters = {"dangling": True, "label": ["io.envkit.stage=builder", f"io.envkit.builder-of={name}"]}
    images = engine.api.images(filters=filters) or []
    return [str(i["Id"]) for i in images if not (i.get("Labels") or {}).get(LAYER_LABEL)]


def test_offline_build_run_skip_rebuild_and_refuse(
    engine: DockerEngine, base_image: str, project: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    _spec(project, f"itest{RUN}-tiny", base_image, ["packaging==24.1", "six==1.16.0"])
    code, env = _build(project, monkeypatch, capsys, f"itest{RUN}-tiny", "--offline")
    assert code == 0, env
    result = env["result"]
    assert result["status"] == "built" and result["offline"] is True
    tag = result["tag"]

    code_line = "import os, packaging, six; print(os.getuid(), packaging.__version__, six.__version__)"
    run = engine.run(tag, ["python", "-c", code_line])
    assert run.exit_code == 0, run.stderr
    uid, packaging_version, six_version = run.stdout.split()
    assert (packaging_version, six_version) == ("24.1", "1.16.0")
    assert uid != "0"
    info = engine.inspect(tag)
    assert info is not None
    assert info.labels["io.envkit.context-sha256"] == result["context_sha256"]
    assert info.labels["io.envkit.cuda"] == "cpu"
    assert len(info.labels["io.envkit.spec-sha256"]) == 64
    assert info.labels["io.envkit.offline"] == "true"
    assert f"envkit/itest{RUN}-tiny:latest" in info.tags
    # the build locked the spec (uv) and the image carries that lock's digest
    assert result["lock"] == "locked"
    loaded = load_spec(project / "environments" / f"itest{RUN}-tiny.yaml")
    lock = current_lock(loaded, project / "images" / f"itest{RUN}-tiny")
    assert lock.fresh and info.labels["io.envkit.lock-sha256"] == lock.lock_sha256
    # the builder stages were removed but this build's layer stages (the next build's cache)
    assert _dangling_builders(engine, f"itest{RUN}-tiny") == []

    code, again = _build(project, monkeypatch, capsys, f"itest{RUN}-tiny", "--offline", "--frozen")
    assert code == 0 and again["result"]["status"] == "up-to-date" and again["result"]["tag"] == tag
    assert again["result"]["lock"] == "fresh"

    _spec(project, f"itest{RUN}-tiny", base_image, ["packaging==24.1", "six==1.17.0"])
    code, changed = _build(project, monkeypatch, capsys, f"itest{RUN}-tiny", "--offline")
    assert code == 0 and changed["result"]["status"] == "built" and changed["result"]["tag"] != tag
    new = engine.inspect(f"envkit/itest{RUN}-tiny:latest")
    assert new is not None and new.labels["io.envkit.context-sha256"] == changed["result"]["context_sha256"]
    assert changed["result"]["lock"] == "locked"  # the spec changed: the stale lock was solved again
    assert _dangling_builders(engine, f"itest{RUN}-tiny") == []

    before = _tags(engine, f"itest{RUN}-tiny")
    _spec(project, f"itest{RUN}-tiny", base_image, ["packaging==24.1", "six==99.0.0"])
    code, failed = _build(project, monkeypatch, capsys, f"itest{RUN}-tiny", "--offline")
    assert code == 2 and failed["ok"] is False
    assert "six==99.0.0" in failed["errors"][0]["message"]
    assert _tags(engine, f"itest{RUN}-tiny") == before


def test_missing_base_image_fails_cleanly(
    engine: DockerEngine, base_image: str, project: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    _spec(project, f"itest{RUN}-nobase", "envkit-test/does-not-exist:1", ["six==1.16.0"])
    code, failed = _build(project, monkeypatch, capsys, f"itest{RUN}-nobase", "--offline")
    assert code == 3
    error = failed["errors"][0]
    assert "envkit-test/does-not-exist:1" in error["message"] and "full log:" in error["message"]
    assert "base_image" in error["hint"]
    assert _tags(engine, f"itest{RUN}-nobase") == set()
    logs = list((project / ".envkit" / "logs").glob(f"itest{RUN}-nobase-*.log"))
    assert logs and "FAILED" in logs[0].read_text()


def test_probe_runs_inside_a_built_image(
    engine: DockerEngine, base_image: str, project: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """No framework in the image: build --probe reports both skipped; probe --image refuses (exit 3)."""
    _spec(project, f"itest{RUN}-probe", base_image, ["six==1.16.0"])
    code, env = _build(project, monkeypatch, capsys, f"itest{RUN}-probe", "--offline", "--probe")
    assert code == 0, env
    probe = env["result"]["probe"]
    assert probe["frameworks"] == {"paddle": "skipped", "torch": "skipped"}
    stored = json.loads(Path(probe["report"]).read_text())
    container = stored["fingerprint"]["container"]
    assert container["image"] == env["result"]["tag"]
    info = engine.inspect(f"envkit/itest{RUN}-probe:latest")
    assert info is not None and container["image_id"] == info.id
    assert stored["fingerprint"]["python"]["version"].startswith("3.11"), stored["fingerprint"]

    # A probe that measured nothing is a tool failure, not a report (issue 16): exit 3, no report.
    store = project / "reports"
    monkeypatch.setenv("ENVKIT_STORE", str(store))
    code = main(["probe", "--image", f"itest{RUN}-probe", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["ok"] is False, out
    assert out["errors"][0]["type"] == "ProbeError"
    assert "torch is not installed" in out["errors"][0]["message"]
    assert not store.exists() or not any(store.rglob("*.json"))


@pytest.mark.slow  # ~165 s here (wheelhouse of torch + deps, then a ~700 MB install), shared: conftest.py
def test_cpu_torch_image(engine: DockerEngine, demo_torch_image: dict[str, Any]) -> None:
    """The demo's CPU torch spec, built offline from a local wheel directory with --probe (conftest.py)."""
    env = {"result": demo_torch_image}
    assert env["result"]["probe"]["frameworks"] == {"torch": "ok"}
    in_image = json.loads(Path(env["result"]["probe"]["report"]).read_text())
    assert in_image["frameworks"]["torch"]["info"]["version"].startswith("2.13.0")
    if importlib.util.find_spec("torch") is not None:  # the same wheel on the host: compare the numbers
        host = run_on_host(ProbeOptions(frameworks=("torch",)), label="host")
        image_report = load_report(Path(env["result"]["probe"]["report"]))
        verdicts = {
            m.verdict for m in compare_reports(host, image_report).comparisons if m.framework == "torch"
        }
        assert verdicts <= {"identical", "equivalent"}, verdicts  # measured here: identical
    run = engine.run(
        env["result"]["tag"], ["python", "-c", "import torch; print(float(torch.ones(3).sum()))"]
    )
    assert run.exit_code == 0 and run.stdout.strip() == "3.0", run.stderr
    # torch carries its own OpenMP runtime: the catalog's "no OS library" fact for torch
    maps = "import torch; print([l.split()[-1] for l in open('/proc/self/maps') if 'libgomp' in l][0])"
    run = engine.run(env["result"]["tag"], ["python", "-c", maps])
    assert run.exit_code == 0 and "/torch/lib/libgomp" in run.stdout, (run.stdout, run.stderr)


def _paddle_wheel_dir() -> Path:
    """paddlepaddle 3.3.1 (CPU, PyPI) and its dependencies: the lock's and the build's only source."""
    platforms = ["manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"]
    return downloaded_wheels(
        "paddle-3.3.1-cpu", "--python-version", "3.11", *(a for p in platforms for a in ("--platform", p)),
        "paddlepaddle==3.3.1", "numpy>=1.26,<3",
    )  # fmt: skip


@pytest.mark.slow  # ~190 MB wheel: wheelhouse, install, probe (seconds added: see the issue-12 note)
def test_cpu_paddle_image_on_the_base_image(
    engine: DockerEngine, base_image: str, project: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """`envkit base-image` + `envkit build --offline --probe` of a CPU Paddle spec: `import paddle` works.

    Paddle's wheels need libgomp.so.1 from the OS: the base image carries it (a catalog fact), so
    the offline build's check passes and the probe runs paddle in the image.
    """
    info = engine.inspect(base_image)
    assert info is not None and "libgomp1" in info.labels.get("io.envkit.base-packages", "")
    wheels = _paddle_wheel_dir()
    extra = f'frameworks:\n  paddle: "3.3.1"\nmirrors:\n  pypi: {wheels.as_uri()}\n'
    _spec(project, f"itest{RUN}-paddle", base_image, ["numpy>=1.26,<3"], extra=extra)
    monkeypatch.setenv("ENVKIT_FIND_LINKS", str(wheels))
    code, env = _build(project, monkeypatch, capsys, f"itest{RUN}-paddle", "--offline", "--probe")
    assert code == 0, env
    assert env["result"]["probe"]["frameworks"] == {"paddle": "ok"}
    run = engine.run(env["result"]["tag"], ["python", "-c", "import paddle; print(paddle.__version__)"])
    assert run.exit_code == 0 and run.stdout.strip() == "3.3.1", run.stderr


def test_offline_build_names_a_library_the_base_lacks(engine: DockerEngine, base_image: str) -> None:
    """The offline check envkit renders, on a base without libgomp.so.1: the build fails naming it."""
    from envkit.catalog import load_catalog
    from envkit.errors import BuildFailed
    from envkit.render.context import ContextFiles, context_tar
    from envkit.render.dockerfile import DockerfileInputs, os_library_step
    from envkit.spec.models import Spec
    from envkit.spec.resolve import resolve_spec

    spec = Spec.model_validate(
        {"name": "nogomp", "python": "3.11", "cuda": "cpu", "installer": "venv", "base_image": base_image,
         "frameworks": {"paddle": "3.3.1"}}
    )  # fmt: skip
    step = os_library_step(
        resolve_spec(spec, load_catalog()), DockerfileInputs(spec_sha256="0" * 64, offline=True)
    )
    dockerfile = (
        f"FROM {base_image}\n"
        'SHELL ["/bin/bash", "-o", "pipefail", "-c"]\n'
        "RUN rm -f /usr/lib/*/libgomp.so.1* && ldconfig\n"  # a base image without libgomp1
        f"{step}"
    )
    context = context_tar(ContextFiles.build({"Dockerfile": dockerfile.encode()}))
    tag = f"envkit/itest{RUN}-nogomp:latest"
    with pytest.raises(BuildFailed) as info:
        list(engine.build(context, tag, labels={}, network=False))
    text = "\n".join([info.value.message, *info.value.log_tail])
    assert "lacks libgomp.so.1 (Debian package libgomp1)" in text, text
    assert engine.inspect(tag) is None
