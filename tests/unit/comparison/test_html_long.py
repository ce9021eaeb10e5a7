"""The comparison pages for real runs of many steps: drawn from an envelope, judged on every step."""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

from envkit.comparison.bands import Bands
from envkit.comparison.html import render_html, step_diffs
from envkit.comparison.nway import compare_many
from envkit.comparison.nway_html import render_nway_html
from envkit.comparison.pairwise import compare_reports
from envkit.comparison.plots import LEFT, MAX_BUCKETS, PLOT_W, envelope
from envkit.probe.model import CompareVerdict, ProbeReport, parse_report
from tests.unit.probe.long_runs import long_report

STEPS = 100_000
SPIKE = 73_211
PAGE_LIMIT = 100_000  # bytes: a 100k-step pair of one workload and 100 parameters (measured: ~55 KB)


@cache
def pair(kind: str) -> tuple[ProbeReport, ProbeReport]:
    b: dict[str, Any]
    if kind == "spike":  # bitwise equal but one step
        b = long_report(STEPS, host="host-b", spikes={SPIKE: 1e-2})
    elif kind == "noise":  # rounding noise growing to 1e-6, 3 parameters differ
        b = long_report(STEPS, host="host-b", noise=1e-6, differing=3)
    else:
        b = long_report(STEPS, host="host-b")
    return parse_report(long_report(STEPS), "a.json"), parse_report(b, "b.json")


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg.*?</svg>", page, re.S)


def _points(svg: str) -> list[tuple[float, float]]:
    out = []
    for pts in re.findall(r'points="([^"]*)"', svg):
        for p in pts.split():
            x, y = p.split(",")
            out.append((float(x), float(y)))
    return out


def test_envelope_keeps_each_buckets_extremes_in_order() -> None:
    values = [float(i % 7) for i in range(10_000)]
    values[4321] = 1e6
    values[8000] = -5.0
    env = envelope(values, 100)
    assert env.n == 10_000 and len(env.points) <= 200
    assert (4321, 1e6) in env.points and (8000, -5.0) in env.points
    assert [i for i, _ in env.points] == sorted(i for i, _ in env.points)
    assert max(v for _, v in env.points) == max(values) and min(v for _, v in env.points) == min(values)


def test_envelope_marks_nonfinite_columns_and_keeps_short_series_whole() -> None:
    values = [1.0] * 5000
    values[10], values[11], values[4999] = math.nan, math.inf, -math.inf
    env = envelope(values, 50)
    assert env.nonfinite == (10, 4999)  # the first of each bucket that holds one
    assert all(math.isfinite(v) for _, v in env.points)
    short = envelope([3.0, math.nan, 1.0], 50)
    assert short.points == ((0, 3.0), (2, 1.0)) and short.nonfinite == (1,)


def test_a_single_step_spike_is_judged_on_every_step_and_still_drawn() -> None:
    a, b = pair("spike")
    comparison = compare_reports(a, b)
    loss = next(c for c in comparison.comparisons if c.metric == "loss")
    # identical at onset, a difference beyond the drift edge late: diverged, at the spike's step only
    assert loss.verdict is CompareVerdict.DIVERGED and loss.first_diff_step == SPIKE
    assert loss.max_rel_diff is not None and math.isclose(loss.max_rel_diff, 1e-2 / 1.01)
    diffs = step_diffs(
        a.frameworks["torch"].workloads["exp1"], b.frameworks["torch"].workloads["exp1"], "loss"
    )
    assert [i + 1 for i, d in enumerate(diffs) if d] == [SPIKE]
    assert (SPIKE - 1, diffs[SPIKE - 1]) in envelope(diffs).points
    page = render_html(a, b, comparison)
    chart = next(s for s in _svgs(page) if "<title>relative difference per step" in s)
    drift_y = float(re.findall(r'<line x1="\d+" y1="([\d.]+)"[^>]*stroke="#555"', chart)[1])
    above = [x for x, y in _points(chart) if y < drift_y]  # drawn beyond the drift edge
    x_spike = LEFT + PLOT_W * (SPIKE - 1) / (STEPS - 1)
    assert above and all(abs(x - x_spike) < 0.1 for x in above)
    assert f"first difference: step {SPIKE:,}" in chart and "drift ≤ 0.005" in chart


def test_the_100k_step_page_stays_light_and_collapses_identical_parameters() -> None:
    a, b = pair("noise")
    comparison = compare_reports(a, b)
    assert comparison.verdict is CompareVerdict.EQUIVALENT  # 1e-6 at the end: within the equivalent edge
    page = render_html(a, b, comparison)
    assert len(page.encode()) < PAGE_LIMIT
    for svg in _svgs(page):
        assert len(_points(svg)) <= 2 * 2 * MAX_BUCKETS  # two series, two points per pixel column
    assert "97 of 100 parameters identical" in page
    assert page.count("<title>per-parameter relative difference") == 1
    assert page.count(">identical<") == 0  # no per-parameter row says identical
    bands = Bands()
    assert f"equivalent ≤ {bands.equivalent:g}" in page and f"drift ≤ {bands.drift:g}" in page
    assert "<script" not in page and "http" not in page


def test_identical_runs_draw_no_difference_plot() -> None:
    a, b = pair("same")
    comparison = compare_reports(a, b)
    assert comparison.verdict is CompareVerdict.IDENTICAL
    page = render_html(a, b, comparison)
    assert "bitwise identical at all 100,000 steps" in page
    assert "100 of 100 parameters identical" in page and "per-parameter relative difference" not in page
    assert len(_svgs(page)) == 1  # the loss curves only


def test_hostile_names_are_escaped() -> None:
    evil = '<img src=x onerror=alert(1)>&"'
    docs = [
        long_report(50, params=4, name=evil, host=f"{evil}{k}", prefix=evil, differing=2 * k)
        for k in range(2)
    ]
    docs[1]["frameworks"]["torch"]["workloads"][evil]["steps"][10]["loss"] *= 1.001
    a, b = (parse_report(d, f"{k}.json") for k, d in enumerate(docs))
    page = render_html(a, b, compare_reports(a, b))
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;&amp;&quot;" in page
    many = render_nway_html([("x", a), (evil, b), ("z", a)], compare_many([("x", a), (evil, b), ("z", a)]))
    assert "<img" not in many and "&lt;img" in many


def test_nway_page_of_long_runs_is_light_and_shows_the_outlier_against_group_one() -> None:
    a, b = pair("spike")
    named = [("n1", a), ("n2", a), ("n3", b)]
    page = render_nway_html(named, compare_many(named))
    assert len(page.encode()) < PAGE_LIMIT
    chart = next(s for s in _svgs(page) if "<title>relative difference of the loss from group 1" in s)
    assert "group 2 loss" in chart
