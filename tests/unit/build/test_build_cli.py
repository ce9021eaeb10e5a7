"""``envkit build`` / ``envkit images`` through ``main(argv)``, on a FakeEngine (no daemon)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.cli import Services, main
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine, FakeRun, failing
from envkit.lock.testing import FakeCondaSolver
from tests.unit.build.conftest import FakePip, PinResolver
from tests.unit.probe.conftest import make_report


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, root: Path) -> FakeEngine:
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    return FakeEngine(default_run=RunResult(0, "uid 10001 python 3.11.2\n", ""))


@pytest.fixture
def envkit(fake: FakeEngine, pip: FakePip) -> Callable[[list[str]], int]:
    """``envkit ARGS`` with the fakes handed to the composition root (nothing patched)."""
    services = Services(
        engine_factory=lambda: fake,
        solver_factory=lambda: (FakeCondaSolver(), PinResolver()),
        pip_runner=pip,
    )
    return lambda argv: main(argv, services=services)


def test_build_then_up_to_date_json(
    fake: FakeEngine, envkit: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert envkit(["build", "tiny", "--offline", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["ok"] is True and first["result"]["status"] == "built"
    assert envkit(["build", "tiny", "--offline", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["result"]["status"] == "up-to-date"
    assert second["result"]["tag"] == first["result"]["tag"]


def _payload(frameworks: dict[str, str]) -> Callable[[FakeRun], RunResult]:
    """Answers the probe payload's run in the image with a valid report (one framework per run)."""

    def answer(run: FakeRun) -> RunResult:
        fw = run.argv[run.argv.index("--frameworks") + 1]
        report = make_report(host="container")
        entry = report["frameworks"]["torch"]
        if frameworks.get(fw, "skipped") != "ok":
            entry = {"status": frameworks.get(fw, "skipped"), "reason": f"{fw} is not installed"}
        report["frameworks"] = {fw: entry}
        return RunResult(0, json.dumps(report), "")

    return answer


def test_probe_runs_the_payload_in_the_image(
    fake: FakeEngine, envkit: Callable[[list[str]], int], root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.handler = _payload({})
    assert envkit(["build", "tiny", "--offline", "--probe", "--json"]) == 0
    probe = json.loads(capsys.readouterr().out)["result"]["probe"]
    assert probe["frameworks"] == {"paddle": "skipped", "torch": "skipped"}  # no framework in the spec
    assert Path(probe["report"]).is_file() and str(root / ".envkit" / "reports") in probe["report"]
    (run,) = [r for r in fake.runs if "torch" in r.argv]
    assert run.argv[:2] == ("sh", "-c") and run.mounts[0].target == "/opt/envkit-probe"


def test_probe_fails_when_a_spec_framework_does_not_run(
    fake: FakeEngine,
    envkit: Callable[[list[str]], int],
    root: Path,
    spec_writer: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec_writer(root, ("six==1.16.0",), frameworks='\n  torch: "2.5.1"')
    fake.handler = _payload({"torch": "error"})
    assert envkit(["build", "tiny", "--probe"]) == 3
    assert "could not run torch" in capsys.readouterr().err
    fake.handler = _payload({"torch": "ok"})
    assert envkit(["build", "tiny", "--probe"]) == 0
    assert "probe: torch bert: ok" in capsys.readouterr().out


def test_failed_build_exits_3_with_tail(
    fake: FakeEngine, envkit: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    fake.build_error = failing("boom", ("ERROR: the last line",))
    assert envkit(["build", "tiny", "--offline"]) == 3
    err = capsys.readouterr().err
    assert "ERROR: the last line" in err and "full log:" in err and "hint:" in err
    assert fake.images_by_tag == {}


def test_missing_pin_exits_2(
    fake: FakeEngine,
    envkit: Callable[[list[str]], int],
    root: Path,
    spec_writer: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec_writer(root, ("doesnotexist==1.0",))
    assert envkit(["build", "tiny", "--offline"]) == 2
    assert "doesnotexist" in capsys.readouterr().err


def test_frozen_without_lock_exits_2(fake: FakeEngine, envkit: Callable[[list[str]], int]) -> None:
    assert envkit(["build", "tiny", "--frozen"]) == 2


def test_images_lists_and_marks_stale(
    fake: FakeEngine,
    envkit: Callable[[list[str]], int],
    root: Path,
    spec_writer: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert envkit(["build", "tiny", "--offline"]) == 0
    capsys.readouterr()
    assert envkit(["images", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["result"]["images"]
    assert row["name"] == "tiny" and row["latest"] is True and row["stale"] is False
    spec_writer(root, ("six==1.17.0",))
    assert envkit(["images"]) == 0
    assert "stale: the spec changed" in capsys.readouterr().out


def test_build_help_explains() -> None:
    assert main(["build", "--help"]) == 0
