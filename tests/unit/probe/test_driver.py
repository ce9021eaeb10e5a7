"""The probe reports the driver minimum of the image's CUDA beside the host driver."""

from __future__ import annotations

import pytest

from envkit.catalog import load_catalog
from envkit.errors import ReportError
from envkit.probe.driver import driver_check, driver_line
from envkit.probe.model import ProbeReport
from envkit.probe.run import ProbeRun
from tests.unit.probe.conftest import make_report, parsed


def report(host_driver: str | None, label: str | None = None, runtime: str | None = None) -> ProbeReport:
    data = make_report()
    data["fingerprint"].update(gpu_driver=host_driver, container={"cuda": label})
    data["frameworks"]["torch"]["cuda_runtime"] = runtime
    return parsed(data)


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("535.104.05", "ok"),
        ("530.30.02", "ok"),
        ("525.85.12", "compat-only"),
        ("470.82.01", "too-old"),
        (None, "no-driver"),
    ],
)
def test_driver_check_against_the_cuda_table(host: str | None, status: str) -> None:
    check = driver_check(report(host, label="12.1"), load_catalog())
    assert check is not None
    assert (check.cuda, check.min_driver, check.compat_driver) == ("12.1", "530.30.02", "525.60.13")
    assert check.status == status


def test_cuda_from_the_framework_when_the_image_has_no_label() -> None:
    check = driver_check(report("450.80.02", runtime="11.8"), load_catalog())
    assert check is not None and check.cuda == "11.8" and check.status == "compat-only"
    assert driver_check(report(None, label="cpu"), load_catalog()) is None


def test_too_old_driver_is_a_warning_with_both_drivers() -> None:
    data = report("470.82.01", label="12.4")
    check = driver_check(data, load_catalog())
    assert check is not None
    run = ProbeRun("x", data.with_driver(check), (), ())
    (line,) = run.warnings
    assert "image CUDA 12.4 needs driver >= 550.54.14" in line and "host driver 470.82.01: TOO OLD" in line
    assert "525.60.13" in driver_line(check)
    assert run.to_json()["report"]["driver"]["status"] == "too-old"  # type: ignore[index]


def test_cuda_from_the_payloads_info_layout() -> None:
    """The payload writes ``cuda_runtime`` inside the framework's ``info`` (torch_probe, paddle_probe)."""
    data = make_report()
    data["fingerprint"].update(gpu_driver="580.65.06", container={})
    data["frameworks"]["torch"].pop("cuda_runtime", None)
    data["frameworks"]["torch"].setdefault("info", {})["cuda_runtime"] = "13.2"
    check = driver_check(parsed(data), load_catalog())
    assert check is not None and check.cuda == "13.2" and check.status == "compat-only"


def test_info_cuda_runtime_of_the_wrong_type_names_its_field() -> None:
    data = make_report()
    data["frameworks"]["torch"].pop("cuda_runtime", None)
    data["frameworks"]["torch"].setdefault("info", {})["cuda_runtime"] = ["12"]
    with pytest.raises(ReportError, match=r"frameworks\.torch\.info\.cuda_runtime: expected a string"):
        parsed(data)
