"""``probe --compare`` of guarded runs says the guard's own step numbers (issue 33, item 8).

Real runs: a tiny torch model trained under :class:`~envkit.guard.Guard`, its ``report.json`` written
by the run log. A run counted from step 0 and one resumed at step 1000 are compared pairwise and
N-way (text, JSON, both HTML pages); a report without ``config.first_step`` still counts from 1.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from envkit.cli import main  # noqa: E402
from envkit.comparison.files import compare_files  # noqa: E402
from envkit.comparison.many import compare_n  # noqa: E402
from envkit.errors import ReportError  # noqa: E402
from envkit.guard import Guard, RunlogOptions  # noqa: E402
from envkit.probe.model import parse_report  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
STEPS = 6


def ce(model: Any, batch: Any) -> Any:
    return F.cross_entropy(model(batch[0]), batch[1])


def train(
    run: Path, start: int, *, nudge_at: int | None = None, nan_at: int | None = None, skip: int | None = None
) -> Path:
    """STEPS guarded steps numbered from ``start``; the batch at position ``nudge_at`` (0-based) scaled
    by 1.01, a NaN planted at ``nan_at``, the step at ``skip`` never passed to the guard."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    guard = Guard(model, opt, run=run, loss_fn=ce, log=RunlogOptions(tensorboard=False))
    g = torch.Generator().manual_seed(1)
    for i in range(STEPS):
        x, y = torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)
        if i == nudge_at:
            x = x * 1.01
        if i == nan_at:
            x[0, 0] = math.nan
        if i == skip:
            continue
        with guard.step(start + i, (x, y)) as step:
            step.backward(ce(model, (x, y)))
            step.optimizer_step()
    guard.close()
    return run / "report.json"


def text_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    main(["probe", "--compare", *args])
    return capsys.readouterr().out


def test_the_report_writes_the_first_records_step_and_the_comparison_reads_it(tmp_path: Path) -> None:
    for start in (0, 1000):
        data = json.loads(train(tmp_path / f"r{start}", start).read_text())
        assert data["config"]["first_step"] == start
        assert [s["step"] for s in data["frameworks"]["torch"]["workloads"]["train"]["steps"]] == [
            1,
            2,
            3,
            4,
            5,
            6,
        ]  # the probe's own numbering stays
        assert parse_report(data, "r").config.first_step == start


def test_steps_with_a_gap_write_no_first_step(tmp_path: Path) -> None:
    """Steps 1000, 1001, 1003, …: no single number maps them, so the report says none (positions)."""
    data = json.loads(train(tmp_path / "gap", 1000, skip=2).read_text())
    assert "first_step" not in data["config"]
    assert parse_report(data, "gap").config.first_step is None


def test_pairwise_from_step_0_is_step_0_not_a_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trap: the guard's first step is 0, a falsy number; it must print, as step 0."""
    a, b = train(tmp_path / "a", 0), train(tmp_path / "b", 0, nudge_at=0)
    out = text_of(capsys, str(a), str(b))
    assert "from step 0" in out, out
    assert "from step 1" not in out, out  # the position is not shown as the step
    done = compare_files((str(a), str(b)), tmp_path, html=tmp_path / "p.html")
    loss = next(c for c in done.comparison.comparisons if c.metric == "loss")
    assert loss.first_diff_step == 1  # the JSON's position, unchanged
    data = done.to_json()
    assert data["first_steps"] == {"a": 0, "b": 0}
    page = (tmp_path / "p.html").read_text()
    assert "first difference: step 0<" in page
    assert "<td>0</td>" in page
    assert ">step 0</text>" in page and ">step 5</text>" in page  # the axes: 0 … 5, not 1 … 6


def test_pairwise_of_two_runs_resumed_at_1000(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = train(tmp_path / "a", 1000), train(tmp_path / "b", 1000, nudge_at=3)
    out = text_of(capsys, str(a), str(b))
    assert "from step 1003" in out, out
    assert "largest at step 100" in out  # the detail names the run's step too
    assert "different first steps" not in out
    done = compare_files((str(a), str(b)), tmp_path, html=tmp_path / "p.html")
    assert {c.first_diff_step for c in done.comparison.comparisons if c.metric == "loss"} == {4}
    page = (tmp_path / "p.html").read_text()
    assert "first difference: step 1,003" in page
    assert ">step 1,000</text>" in page and ">step 1,005</text>" in page
    assert "<td>1003</td>" in page
    main(["probe", "--compare", str(a), str(b), "--json"])
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["first_steps"] == {"a": 1000, "b": 1000}
    assert {c["first_diff_step"] for c in result["comparisons"] if c["metric"] == "loss"} == {4}


def test_a_run_from_0_against_one_resumed_at_1000_says_they_count_differently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = train(tmp_path / "a", 0), train(tmp_path / "b", 1000, nudge_at=3)
    out = text_of(capsys, str(a), str(b))
    assert "from step 3/1003" in out, out
    assert "note: the runs count steps from different first steps (a: 0, b: 1000)" in out
    compare_files((str(a), str(b)), tmp_path, html=tmp_path / "p.html")
    page = (tmp_path / "p.html").read_text()
    assert "different first steps (a: 0, b: 1000)" in page
    assert ">step 0/1,000</text>" in page and "<td>3/1003</td>" in page


def test_a_nan_is_named_at_the_runs_own_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = train(tmp_path / "a", 1000), train(tmp_path / "b", 1000, nan_at=3)
    out = text_of(capsys, str(a), str(b))
    assert "NaN/Inf on b at step 1003" in out, out
    assert "from step 1003" in out


def test_n_way_of_resumed_runs_shows_the_guards_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [train(tmp_path / n, 1000, nudge_at=2 if n == "odd" else None) for n in ("x", "y", "odd")]
    out = text_of(capsys, *map(str, runs))
    group2 = next(line for line in out.splitlines() if line.strip().startswith("group 2"))
    assert "from step 1002" in group2, out
    assert "different first steps" not in out
    done = compare_n([str(r) for r in runs], tmp_path, html=tmp_path / "n.html")
    assert done.result.groups[1].first_diff_step == 3  # JSON: the position
    assert set(done.to_json()["first_steps"].values()) == {1000}  # type: ignore[attr-defined]
    page = (tmp_path / "n.html").read_text()
    assert "<td>1002</td>" in page
    assert ">step 1,000</text>" in page and ">step 1,005</text>" in page


def test_n_way_from_0_and_1000_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [train(tmp_path / "x", 0), train(tmp_path / "y", 0), train(tmp_path / "odd", 1000, nudge_at=0)]
    out = text_of(capsys, *map(str, runs))
    group2 = next(line for line in out.splitlines() if line.strip().startswith("group 2"))
    assert "from step 0/1000" in group2, out
    assert "note: the runs count steps from different first steps" in out
    assert f"{runs[2]}: 1000" in out


def test_a_report_without_first_step_counts_from_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A guard report written before first_step (the key dropped) reads as positions, as before."""
    a, b = train(tmp_path / "a", 0), train(tmp_path / "b", 0, nudge_at=3)
    for path in (a, b):
        data = json.loads(path.read_text())
        del data["config"]["first_step"]
        path.write_text(json.dumps(data))
    out = text_of(capsys, str(a), str(b))
    assert "from step 4" in out and "different first steps" not in out
    main(["probe", "--compare", str(a), str(b), "--json"])
    assert "first_steps" not in json.loads(capsys.readouterr().out)["result"]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0", "expected an integer"),
        (True, "expected an integer"),
        (1.5, "expected an integer"),
        (2**64, "out of range"),
    ],
)
def test_a_hostile_first_step_is_refused_naming_the_field(tmp_path: Path, value: object, why: str) -> None:
    data = json.loads(train(tmp_path / "a", 0).read_text())
    data["config"]["first_step"] = value
    with pytest.raises(ReportError, match=f"config.first_step: .*{why}"):
        parse_report(data, "hostile")
    data["config"]["first_step"] = None  # null: no numbering, as a report without the key
    assert parse_report(data, "null").config.first_step is None
