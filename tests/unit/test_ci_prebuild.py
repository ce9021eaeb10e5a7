"""What `.ci/run`'s background prebuild relies on (tests/integration/prebuild.py): the tests on its
outputs run last, a wheel the flagship build downloaded is reused only when the committed lock pins
its sha256, and the machine locks exclude a second holder."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration import cuda_wheels
from tests.integration.conftest import PREBUILT_MODULES
from tests.integration.machine_lock import LockTimeout, machine_lock

ROOT = Path(__file__).resolve().parents[2]
CUDNN = "nvidia_cudnn_cu11-8.6.0.163-py3-none-manylinux1_x86_64.whl"


def test_every_module_on_the_prebuilt_inputs_runs_last_and_exists() -> None:
    integration = ROOT / "tests" / "integration"
    uses = {
        path.name
        for path in integration.glob("test_*.py")
        if re.search(r"cuda_paddle_image|tests\.integration\.cuda_wheels", path.read_text("utf-8"))
    }
    assert uses == set(PREBUILT_MODULES), "PREBUILT_MODULES in tests/integration/conftest.py"


def test_the_collection_puts_the_prebuilt_modules_last() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/integration/test_cuda_images.py",
         "tests/integration/test_bands_length.py", "tests/unit/test_ci_tools.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert done.returncode == 0 and ids, done.stdout + done.stderr
    files = [i.split("::")[0] for i in ids]
    first_cuda = files.index("tests/integration/test_cuda_images.py")
    assert set(files[first_cuda:]) == {"tests/integration/test_cuda_images.py"}, files
    assert "tests/unit/test_ci_tools.py" in files[:first_cuda]


def _house(tmp_path: Path, data: bytes, pinned: bytes, entry: str = "19bd7ea7936d9e33") -> tuple[Path, Path]:
    house = tmp_path / "wheelhouse"
    (house / entry).mkdir(parents=True)
    (house / entry / CUDNN).write_bytes(data)
    lock = tmp_path / "requirements.lock"
    digest = hashlib.sha256(pinned).hexdigest()
    lock.write_text(f"nvidia-cudnn-cu11==8.6.0.163 \\\n    --hash=sha256:{digest}\n", "utf-8")
    return house, lock


def test_a_flagship_wheel_the_lock_pins_is_reused(tmp_path: Path) -> None:
    house, lock = _house(tmp_path, b"the wheel", b"the wheel")
    found = cuda_wheels.from_flagship("nvidia_cudnn_cu11-8.6.0.163-*.whl", house, lock)
    assert found == house / "19bd7ea7936d9e33" / CUDNN


@pytest.mark.parametrize(
    ("data", "entry"),
    [
        (b"another file under the same name", "19bd7ea7936d9e33"),  # not the pinned bytes
        (b"the wheel", ".19bd7ea7936d9e33.tmp"),  # an entry still being filled
        (b"the wheel", ".19bd7ea7936d9e33.link"),
    ],
)
def test_a_wheel_the_lock_does_not_pin_or_unfinished_is_not_reused(
    tmp_path: Path, data: bytes, entry: str
) -> None:
    house, lock = _house(tmp_path, data, b"the wheel", entry)
    assert cuda_wheels.from_flagship("nvidia_cudnn_cu11-8.6.0.163-*.whl", house, lock) is None


def test_no_wheelhouse_or_no_lock_reuses_nothing(tmp_path: Path) -> None:
    house, lock = _house(tmp_path, b"the wheel", b"the wheel")
    assert cuda_wheels.from_flagship("nvidia_cudnn_cu11-*.whl", tmp_path / "none", lock) is None
    assert cuda_wheels.from_flagship("nvidia_cudnn_cu11-*.whl", house, tmp_path / "none.lock") is None


def test_the_shipped_flagship_lock_pins_the_shared_wheels() -> None:
    text = cuda_wheels.FLAGSHIP_LOCK.read_text("utf-8")
    shared = ("paddlepaddle-gpu==2.6.2", "nvidia-cudnn-cu11==8.6.0.163", "nvidia-cublas-cu11==11.11.3.6",
              "nvidia-cuda-runtime-cu11==11.8.89", "nvidia-cuda-nvrtc-cu11==11.8.89")  # fmt: skip
    for requirement in shared:
        assert requirement in cuda_wheels.WHEELS and f"\n{requirement} \\\n" in f"\n{text}", requirement


def test_a_held_machine_lock_makes_the_second_wait_then_give_up(tmp_path: Path) -> None:
    name = f"unit-{tmp_path.name}"
    with machine_lock(name) as path:  # held here: another process cannot take it (flock(2), as flock(1))
        other = subprocess.run(
            [sys.executable, "-c", f"import fcntl; f = open({str(path)!r}, 'a'); "
             "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert other.returncode != 0 and "BlockingIOError" in other.stderr
    holder = subprocess.Popen(  # another process holds it for a minute
        [sys.executable, "-c", f"import fcntl, time; f = open({str(path)!r}, 'a'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(LockTimeout, match="was held for more than 3 s"), machine_lock(name, wait_s=3):
            pass
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    with machine_lock(name, wait_s=10):  # released with its holder
        pass
    path.unlink()
