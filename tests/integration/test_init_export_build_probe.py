"""The machine where it worked -> an image that trains the same, end to end with real tools.

1. *The host where it worked*: a conda environment made by real conda 26.7.1 (../shared/conda-bundle,
   ``conda create --offline``) with torch 2.13.0+cpu and its dependencies installed by that
   environment's own pip. No conda channel is reachable here, so the channel is made locally
   (:func:`envkit.offline.testing.make_real_channel`, real archives): its ``python`` 3.11.2 package
   makes the prefix a venv of ``/usr/bin/python3.11`` — Debian bookworm's 3.11.2, the interpreter of
   this host and of the base image ``envkit/debian-python:bookworm`` alike, so the one package the
   export pins serves both sides — and its ``pip`` is ensurepip's wheel.
2. ``conda env export`` of it: the ``environment.yml`` a team arrives with (conda writes its ``pip:``
   section from the prefix's site-packages because the prefix has a conda ``python`` record).
3. ``envkit init --from environment.yml``: the CPU variant (``cuda: cpu``, torch 2.13.0 carried).
   The export names no base image and no index; with no registry and no torch index reachable, the
   test adds the bootstrapped base image and the wheelhouse ``test_cpu_torch_image`` uses
   (torch from /opt/wheels + its dependencies) as ``mirrors.pypi``. Nothing else is edited.
4. ``envkit build --offline --probe``: the image, and the probe inside it.
5. ``envkit probe --python <env>/bin/python`` and ``envkit probe --image``, one intra-op thread each:
   the probe on the host, in the exported environment, and in the image.
6. ``envkit probe --compare host image``: the verdict, and why.

Measured here: verdict ``identical`` (every metric, max relative difference 0) and one environment
difference, the image itself; the conda records and the installed distributions are the same on
both sides. The numbers alone would not tell the environments apart: envkit's own interpreter here
(torch 2.15.0+cu132, on CPU) also probes ``identical`` against this image, with 36 environment
differences named (torch, CUDA runtime, cuDNN, the nvidia-* wheels, Python 3.11.7); so the test
asserts the causes as well as the verdict. ~6.5-7.5 min on this shared 2-CPU machine, most of it
the build (``test_cpu_torch_image``'s torch layer plus the conda prefix, then normalising the
layers), the host's pip install of torch and removing the 1.2 GB image afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from envkit.comparison.causes import THREAD_ENV
from envkit.engine.docker_api import DockerEngine
from envkit.offline.testing import make_real_channel, venv_python
from tests.conda_bundle import RealConda
from tests.integration.conftest import TORCH_WHEELS, debian_base, remove_images_of, torch_wheel_dir
from tests.integration.test_pack_offline_conda import _cli, _pip_package

pytestmark = [pytest.mark.docker, pytest.mark.conda, pytest.mark.frameworks, pytest.mark.slow]

BASE = "envkit/debian-python:bookworm"  # Debian bookworm: /usr/bin/python3.11 is 3.11.2
INTERPRETER = "/usr/bin/python3.11"
NAME = f"itest{os.getpid()}-adopted"
CONDA = "26.7.1"


def _python_version(exe: str) -> str:
    done = subprocess.run([exe, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip()


@pytest.fixture
def work(engine: DockerEngine) -> Iterator[Path]:
    """Its own folder (pytest's numbered ones can be rotated away by a parallel run in minutes)."""
    with tempfile.TemporaryDirectory(prefix="envkit-export-build-") as tmp:
        yield Path(tmp)
    remove_images_of(engine, NAME)


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    return DockerEngine()


def _exported_host(real: RealConda, root: Path, wheels: Path) -> tuple[Path, Path]:
    """A real conda environment with torch 2.13.0+cpu by pip, and its ``conda env export``."""
    channel = make_real_channel(
        root / "channel", [venv_python("3.11.2", interpreter=INTERPRETER), _pip_package()]
    )
    env = {**real.env(root / "scratch"), "CONDA_SOLVER": "classic"}  # see test_init_real_conda
    prefix = root / "envs" / "worked"
    real.ok(["create", "-y", "-q", "-p", str(prefix), "--offline", "--override-channels", "-c", channel,
             "python=3.11.2", "pip"], root / "scratch", env)  # fmt: skip
    subprocess.run(
        [str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
         "--find-links", str(wheels), "torch==2.13.0+cpu", "numpy", "--disable-pip-version-check"],
        check=True, capture_output=True,
    )  # fmt: skip
    export = root / "environment.yml"
    export.write_text(real.ok(["env", "export", "-p", str(prefix)], root / "scratch", env))
    return prefix, export


def test_conda_export_to_offline_cpu_image_probes_the_same_as_the_host(
    condas: dict[str, RealConda], engine: DockerEngine, work: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    if not list(TORCH_WHEELS.glob("torch-2.13.0+cpu-cp311-*.whl")):
        pytest.skip(f"no torch 2.13.0 CPU wheel in {TORCH_WHEELS}")
    if not Path(INTERPRETER).is_file() or _python_version(INTERPRETER) != "3.11.2":
        pytest.skip(f"the host needs the base image's interpreter ({INTERPRETER}, 3.11.2, Debian bookworm)")
    base = debian_base(engine)
    wheels = torch_wheel_dir()
    prefix, export = _exported_host(condas[CONDA], work, wheels)
    text = export.read_text()
    assert "  - python=3.11.2=h0_envkit\n" in text and "      - torch==2.13.0+cpu\n" in text, text

    # -- export -> spec ---------------------------------------------------------------------------
    project = work / "project"
    project.mkdir()
    code, adopted = _cli(monkeypatch, capsys, project, "init", "--from", str(export), "--name", NAME)
    assert code == 0, adopted
    result = adopted["result"]
    assert result["detected"] == {"python": "3.11", "cuda": "cpu", "torch": "2.13.0"}
    assert "python=3.11.2=h0_envkit" in result["conda"] and result["not_carried"] == []
    spec = project / "environments" / f"{NAME}.yaml"
    with spec.open("a") as fh:  # what the export cannot name: the base image and an index reachable here
        fh.write(f"base_image: {base}\nmirrors:\n  pypi: {wheels.as_uri()}\n")

    # -- spec -> offline image, probed inside ------------------------------------------------------
    monkeypatch.setenv("ENVKIT_FIND_LINKS", str(wheels))
    code, built = _cli(monkeypatch, capsys, project, "build", NAME, "--offline", "--probe")
    assert code == 0, built
    image = built["result"]
    assert image["status"] == "built" and image["offline"] is True
    assert (
        image["labels"]["io.envkit.installer"] == "miniconda" and image["labels"]["io.envkit.cuda"] == "cpu"
    )
    assert image["probe"]["frameworks"] == {"torch": "ok"}

    # -- the host where the export came from, probed with that environment's python ---------------
    host_report = work / "host.json"
    python = str(prefix / "bin" / "python")
    # the environment as its users run it: not with the test runner's PYTHONPATH (a checkout's
    # envkit_dl.egg-info there would show up as an installed distribution on the host side only)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    # one intra-op thread on both sides: with the default (every core) a busy machine's thread timing
    # can reorder a reduction (seen once in a full CI-like run: `equivalent`, causes = the image only)
    probe = ("probe", "--frameworks", "torch", "--threads", "1", "--no-store")
    code, probed = _cli(monkeypatch, capsys, project, *probe, "--python", python, "--label", "host",
                        "-o", str(host_report))  # fmt: skip
    assert code == 0, probed
    image_report = work / "image.json"
    code, probed = _cli(
        monkeypatch, capsys, project, *probe, "--image", image["tag"], "-o", str(image_report)
    )
    assert code == 0, probed
    host = json.loads(host_report.read_text())["fingerprint"]
    in_image = json.loads(image_report.read_text())["fingerprint"]
    assert host["python"]["version"] == "3.11.2"  # the environment's interpreter, not envkit's own
    assert host["distributions"]["torch"] == "2.13.0+cpu"
    assert "python=3.11.2=h0_envkit" in host["conda_meta"]
    assert (host["conda_meta"], host["distributions"]) == (in_image["conda_meta"], in_image["distributions"])

    # -- the compare ------------------------------------------------------------------------------
    code, compared = _cli(
        monkeypatch, capsys, project, "probe", "--compare", str(host_report), str(image_report)
    )
    assert code == 0, compared
    verdict = compared["result"]
    assert verdict["names"][0] == "host" and verdict["names"][1].startswith("image-")
    rows = {(c["workload"], c["metric"]): c for c in verdict["comparisons"] if c["framework"] == "torch"}
    assert {w for w, _ in rows} == {"bert", "rnn"} and len(rows) == 8, rows
    # same packages, python and conda records both sides: the differences are the image and the
    # variables this machine's environment sets for the host probe alone (OPENBLAS_CORETYPE and
    # OPENBLAS_L2_SIZE on some machines of this kind), read from the two fingerprints, never assumed
    host_only = sorted(
        k for k in set(host["env"]) | set(in_image["env"]) if host["env"].get(k) != in_image["env"].get(k)
    )
    causes = verdict["causes"]
    assert sorted(c["kind"] for c in causes) == sorted(["image", *(_env_kind(k) for k in host_only)]), causes
    assert all(any(k in c["message"] for c in causes) for k in host_only), (host_only, causes)
    diffs = {f"{w} {m}": (c["verdict"], c["max_rel_diff"]) for (w, m), c in rows.items()}
    assert verdict["verdict"] == "identical", diffs  # measured: every metric 0 relative difference
    assert all(c["verdict"] == "identical" and c["max_rel_diff"] == 0.0 for c in rows.values()), diffs


def _env_kind(name: str) -> str:
    """The cause kind `envkit probe --compare` gives a difference in one environment variable."""
    if name in THREAD_ENV:
        return "threads"
    return "tf32" if name in ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") else "env"
