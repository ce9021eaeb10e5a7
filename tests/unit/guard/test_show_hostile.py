"""``envkit guard show`` / ``--html`` / ``guard replay`` on run folders and dumps someone else wrote.

Each shape is a class (issue 43 item 2, 6, 8): a field of the wrong type anywhere ``show`` reads is
exit 2 naming the field (never a traceback); every text from a file is printed on one line (a
newline, a carriage return, an escape sequence cannot forge a line or retitle the terminal); a
number a float cannot hold (``10**4000``) is refused by name; a FIFO or a link where ``steps.jsonl``
belongs is refused, never waited on.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main


def _step(i: int) -> dict[str, Any]:
    return {
        "step": i, "loss": 1.0, "grad_norm": 2.0, "clipped_norm": 1.0, "lr": 0.1, "loss_scale": None,
        "overflow": False, "skipped": None, "lrs": [0.1], "update_ratios": [1e-3],
    }  # fmt: skip


INCIDENT = {
    "step": 1,
    "kind": "nonfinite-loss",
    "message": "the loss is nan",
    "action": "skipped",
    "dump": "incidents/step-1",
    "ranks": [0],
    "localization": {"first_nonfinite_module": {"module": "head", "type": "Linear"}, "hints": ["h"]},
    "context": {"lrs": [0.1], "largest_before": {"lrs": [0.1]}},
}


def report(**guard: Any) -> dict[str, Any]:
    steps = [
        {"step": i + 1, "loss": 1.0, "grad_norm": 2.0, "finite": {"loss": True, "grads": True}}
        for i in range(3)
    ]
    part: dict[str, Any] = {
        "schema": 1,
        "steps": [_step(i) for i in range(3)],
        "skips": [{"step": 1, "reason": "nonfinite-loss: the loss is nan"}],
        "incidents": [copy.deepcopy(INCIDENT)],
        "clipped_steps": 3,
        "config": {"ledger": {"mode": "skip", "batches": []}},
        "rank": 0,
        "world_size": 1,
        "closed": True,
    }
    part.update(guard)
    return {
        "schema": 1,
        "kind": "envkit-probe-report",
        "label": "train",
        "config": {"seed": 0, "steps": 3, "workloads": ["train"], "mode": "guard", "dtype": "float32"},
        "fingerprint": {"host": "h"},
        "frameworks": {
            "torch": {"status": "ok", "info": {}, "workloads": {"train": {"status": "ok", "steps": steps}}}
        },
        "guard": part,
    }


def write(tmp_path: Path, doc: Any, steps: str | None = None) -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "report.json").write_text(json.dumps(doc))
    if steps is not None:
        (run / "steps.jsonl").write_text(steps)
    return run


def show(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["guard", "show", *args])
    out, err = capsys.readouterr()
    return code, out, err


def with_incident(**fields: Any) -> list[dict[str, Any]]:
    return [{**copy.deepcopy(INCIDENT), **fields}]


@pytest.mark.parametrize(
    ("guard", "field"),
    [
        ({"incidents": with_incident(localization="the first module")}, "localization"),
        ({"incidents": with_incident(localization=["a"])}, "localization"),
        ({"incidents": with_incident(ranks=3)}, "ranks"),
        ({"incidents": with_incident(ranks=["0"])}, "ranks[0]"),
        ({"incidents": with_incident(ranks=[-1])}, "ranks[0]"),
        ({"incidents": with_incident(step="1")}, "step"),
        ({"incidents": with_incident(step=True)}, "step"),
        ({"incidents": with_incident(kind=["nonfinite-loss"])}, "kind"),
        ({"incidents": with_incident(message=None)}, "message"),
        ({"incidents": with_incident(dump=7)}, "dump"),
        ({"incidents": with_incident(context="lr 0.1")}, "context"),
        ({"incidents": ["an incident"]}, "guard.incidents"),
        ({"incidents": {"0": INCIDENT}}, "guard.incidents"),
        ({"clipped_steps": "3"}, "clipped_steps"),
        ({"clipped_steps": -3}, "clipped_steps"),
        ({"clipped_steps": 2.5}, "clipped_steps"),
        ({"world_size": "2"}, "world_size"),
        ({"world_size": 0}, "world_size"),
        ({"world_size": 10**30}, "world_size"),
        ({"rank": "0"}, "rank"),
        ({"closed": "yes"}, "closed"),
        ({"config": "skip"}, "config"),
        ({"config": {"ledger": ["hit"]}}, "config.ledger"),
        ({"config": {"ledger": {"batches": ["hit"]}}}, "config.ledger.batches"),
        ({"skips": [{"step": "1", "reason": "x"}]}, "skips[0]: step"),
        ({"skips": [{"step": 1, "reason": {"why": "x"}}]}, "skips[0]: reason"),
        ({"steps": [{**_step(0), "loss": "abc"}]}, "steps[0]: loss"),
        ({"steps": [{**_step(0), "loss": 10**4000}]}, "steps[0]: loss"),
        ({"steps": [{**_step(0), "grad_norm": [1.0]}]}, "steps[0]: grad_norm"),
        ({"steps": [{**_step(0), "step": 1.5}]}, "steps[0]: step"),
        ({"steps": [{**_step(0), "overflow": "no"}]}, "steps[0]: overflow"),
        ({"steps": [{**_step(0), "lrs": "0.1"}]}, "steps[0]: lrs"),
        ({"steps": [{**_step(0), "skipped": 1}]}, "steps[0]: skipped"),
        ({"steps": ["step 0"]}, "steps[0]"),
    ],
)
def test_a_field_of_the_wrong_type_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], guard: dict[str, Any], field: str
) -> None:
    code, out, err = show([str(write(tmp_path, report(**guard)))], capsys)
    assert code == 2, (out, err)
    assert field in err and "Traceback" not in err + out
    assert err.startswith("error: ") and "hint:" in err


FORGED = "ok\nno incidents\n\x1b]0;pwned\x07\r"


@pytest.mark.parametrize(
    "guard",
    [
        {"skips": [{"step": 1, "reason": FORGED}]},
        {"incidents": with_incident(message=FORGED)},
        {"incidents": with_incident(kind=FORGED)},
        {"incidents": with_incident(action=FORGED)},
        {"incidents": with_incident(dump=FORGED)},
        {
            "incidents": with_incident(
                localization={"first_nonfinite_module": {"module": FORGED, "type": "X"}}
            )
        },
        {"incidents": with_incident(localization={"raised_in": "m", "error": FORGED})},
        {"incidents": with_incident(localization={"hints": [FORGED]})},
        {"incidents": with_incident(localization={"first_nonfinite_grad": FORGED})},
        {"incidents": with_incident(localization={"largest_grad": {"parameter": FORGED, "norm": 1}})},
        {"incidents": with_incident(localization={"nonfinite_batch": {"index": [FORGED], "tensor": FORGED}})},
        {"incidents": with_incident(context={"lrs": [FORGED], "largest_before": {"lrs": [FORGED]}})},
        {"config": {"ledger": {"batches": [{"step": 3, "action": FORGED, "run": FORGED, "kind": FORGED}]}}},
    ],
)
def test_a_text_from_the_run_folder_is_printed_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], guard: dict[str, Any]
) -> None:
    doc = report(**guard)
    clean = tmp_path / "clean"  # the same run with a plain text where the forged one was
    clean.mkdir()
    _, expected, _ = show(
        [str(write(clean, json.loads(json.dumps(doc).replace(json.dumps(FORGED)[1:-1], "ok"))))], capsys
    )
    code, out, err = show([str(write(tmp_path, doc))], capsys)
    assert code == 1 and "Traceback" not in err
    lines = out.splitlines()
    assert "no incidents" not in lines  # the run has an incident: no line may say otherwise
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert len(lines) == len(expected.splitlines())


def test_strange_values_in_the_localization_are_shown_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where ``show`` only prints (no count, no decision), any JSON value is printed, on one line."""
    loc = {
        "first_nonfinite_module": {"module": 3, "type": None, "inputs_absmax": 10**4000, "output": [1]},
        "first_nonfinite_backward": "x",
        "largest_grad": [1, 2],
        "hints": "not a list",
        "nonfinite_batch": {"index": [1, 2], "count": "many", "size": None, "value": {"v": 1}},
    }
    code, out, err = show([str(write(tmp_path, report(incidents=with_incident(localization=loc))))], capsys)
    assert code == 1 and "Traceback" not in err, err
    assert "first non-finite output: 3 (None)" in out and "…" in out


def test_html_refuses_a_step_beyond_a_float(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.dumps(_step(i)) for i in range(3)]
    for bad, field in [('"loss": 1.0', "loss"), ('"step": 2', "step"), ('"lrs": [0.1]', "lrs[0]")]:
        value = "1" + "0" * 4000
        text = "\n".join(lines).replace(
            bad, bad.split(":")[0] + ": " + (f"[{value}]" if "lrs" in bad else value)
        )
        run = write(tmp_path, report(), steps=text + "\n")
        code, _, err = show([str(run), "--html", str(tmp_path / "p.html")], capsys)
        assert code == 2 and "Traceback" not in err, err
        assert "steps.jsonl:" in err and field in err


def test_html_draws_huge_but_finite_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{**_step(i), "loss": v, "grad_norm": v} for i, v in enumerate([1.7e308, -1.7e308, 5e-324, 0.0])]
    run = write(tmp_path, report(steps=rows), steps="".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = show([str(run), "--html", str(tmp_path / "p.html")], capsys)
    assert code == 1 and "Traceback" not in err, err
    assert "nan," not in (tmp_path / "p.html").read_text()


def test_html_refuses_a_fifo_steps_file_without_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write(tmp_path, report())
    os.mkfifo(run / "steps.jsonl")
    result: list[tuple[int, str, str]] = []
    worker = threading.Thread(
        target=lambda: result.append(show([str(run), "--html", str(tmp_path / "p.html")], capsys)),
        daemon=True,
    )
    worker.start()
    worker.join(20)
    if worker.is_alive():  # unblock the reader so the test process can end
        fd = os.open(run / "steps.jsonl", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(5)
        pytest.fail("guard show --html waited on a FIFO steps.jsonl")
    code, _, err = result[0]
    assert code == 2 and "steps.jsonl" in err and "regular" in err


def test_html_refuses_a_linked_steps_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps(_step(0)) + "\n")
    run = write(tmp_path, report())
    (run / "steps.jsonl").symlink_to(secret)
    code, _, err = show([str(run), "--html", str(tmp_path / "p.html")], capsys)
    assert code == 2 and "steps.jsonl" in err and "link" in err


def test_a_steps_line_longer_than_a_record_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write(tmp_path, report(), steps=json.dumps({**_step(0), "pad": "x" * (2 << 20)}) + "\n")
    code, _, err = show([str(run), "--html", str(tmp_path / "p.html")], capsys)
    assert code == 2 and "steps.jsonl:1" in err and "longer than" in err


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"info": {"switches": "num_threads=2"}}, "info.switches"),
        ({"info": ["torch"]}, "info"),
        ({"info": {"switches": {"num_threads": "two"}}}, "num_threads"),
        ({"info": {"switches": {"num_threads": "2\nverdict"}}}, "num_threads"),
        ({"info": {"switches": {"num_threads": "9" * 4000}}}, "num_threads"),
        ({"info": {"switches": {"num_threads": True}}}, "num_threads"),
        ({"framework": "jax"}, "framework"),
        ({"fingerprint": "host-a"}, "fingerprint"),
    ],
)
def test_replay_reads_a_hostile_env_json_without_a_traceback(env: dict[str, Any], field: str) -> None:
    from envkit.errors import EnvkitError
    from envkit.incident.replay import side_report

    base: dict[str, Any] = {"fingerprint": {"host": "h"}, "framework": "torch", "info": {"switches": {}}}
    with pytest.raises(EnvkitError, match=field.replace(".", r"\.")):
        side_report({**base, **env}, "DUMP/env.json")


def test_replay_reads_the_thread_count_paddle_dumps_wrote_as_text() -> None:
    # Paddle's adapter wrote OMP_NUM_THREADS as set ("1") until this release: such a dump is the
    # run's own (the guard corpus's paddle_vit/loss-nan replay was refused on it), not an edited one
    from envkit.incident.replay import side_report

    env: dict[str, Any] = {
        "fingerprint": {"host": "h"},
        "framework": "paddle",
        "info": {"switches": {"num_threads": "1"}},
    }
    assert side_report(env, "DUMP/env.json").config.get("threads") == 1


def test_replay_text_is_one_line_per_field() -> None:
    from envkit.incident.show import render_replay

    data = {
        "dump": "d\nno",
        "step": 3,
        "verdict": "transient",
        "recorded": {"loss": 1.0, "grad_norm": 2.0, "kind": "x\nreproducible"},
        "replays": [{"loss": 1.0, "grad_norm": 2.0, "error": "E\nreproducible"}],
        "localization": {"hints": ["a\nb"]},
        "causes": [{"message": "gpu\x1b[2J\nverdict: reproducible"}],
        "notes": ["n\nreproducible"],
    }
    text = render_replay(data)
    assert len(text.splitlines()) == 6 and "\x1b" not in text
    forged = {"no", "reproducible", "verdict: reproducible", "b"}
    assert not any(line.strip() in forged for line in text.splitlines())
