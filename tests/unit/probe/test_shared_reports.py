"""SharedReader reads what read_report reads: the same values, the same errors, parts shared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.errors import ReportError
from envkit.probe.report import dump_report, read_report
from envkit.probe.shared_reports import SharedReader
from tests.unit.probe.conftest import make_report, parsed

TEMPLATE = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "probe-report-torch-paddle-cpu.json"


def _texts() -> list[str]:
    base = make_report()
    hosts = ("host-b", "host-c", "a-much-longer-host-name-than-before")
    texts = [dump_report(parsed(base)), *(dump_report(parsed(make_report(host=h))) for h in hosts)]
    other = make_report(host="host-d")
    other["frameworks"]["torch"]["workloads"]["rnn"]["steps"][0]["loss"] = 0.5  # other numbers
    texts.append(dump_report(parsed(other)))
    texts.append(dump_report(parsed(make_report(host="host-e"))))  # back to the majority
    texts.append(
        dump_report(parsed(make_report(host="host-f", label="other-label")))
    )  # outside the fingerprint
    texts.append(json.dumps(make_report(host="host-g")))  # other layout: read in full
    texts.append(TEMPLATE.read_text("utf-8"))
    texts.append(TEMPLATE.read_text("utf-8").replace('"host": "vm"', '"host": "node-7"'))
    return texts


def test_the_same_reports_as_read_report_with_the_shared_parts_shared() -> None:
    reader = SharedReader()
    texts = _texts()
    got = [reader.read(t, f"r{i}.json") for i, t in enumerate(texts)]
    want = [read_report(t, f"r{i}.json") for i, t in enumerate(texts)]
    assert got == want
    assert [g.document for g in got] == [w.document for w in want]
    assert [list(g.document) for g in got] == [list(w.document) for w in want]  # key order too
    assert reader.shared == 5  # host-b, -c, the long name, host-e, node-7
    assert got[1].frameworks is got[0].frameworks and got[1].config is got[0].config
    assert got[5].frameworks is got[0].frameworks  # the majority's reference was kept past the outlier
    assert got[1].host == "host-b" and got[3].host == "a-much-longer-host-name-than-before"


@pytest.mark.parametrize(
    ("fingerprint", "message"),
    [
        ('{"host": ["a", "list"]}', "fingerprint.host: expected a string, got a list"),
        ('{"env": "not an object"}', "fingerprint.env: expected an object"),
        ('"just text"', "fingerprint: expected an object"),
        ("[" * 40 + "]" * 40, "nested deeper than 32 levels"),
        ('{"host": "x"', "truncated or corrupted report"),
        ('{"host": "x"}, "fingerprint": {"host": "y"}', None),  # a key twice: read in full
    ],
)
def test_a_bad_fingerprint_gives_read_reports_error(fingerprint: str, message: str | None) -> None:
    good = make_report()
    text = dump_report(parsed(good))
    reader = SharedReader()
    reader.read(text, "first.json")
    start = text.index('"fingerprint": ') + len('"fingerprint": ')
    end = start + len(json.dumps(good["fingerprint"], indent=1, sort_keys=True).replace("\n", "\n "))
    assert json.loads(text[start:end]) == good["fingerprint"]
    bad = text[:start] + fingerprint + text[end:]
    try:
        expected = read_report(bad, "bad.json")
    except ReportError as e:
        assert message is not None and message in e.message
        with pytest.raises(ReportError) as got:
            reader.read(bad, "bad.json")
        assert (got.value.message, got.value.hint) == (e.message, e.hint)
    else:
        assert message is None
        assert reader.read(bad, "bad.json") == expected


def _nested(n: int, inner: str = "") -> str:
    return "[" * n + inner + "]" * n


@pytest.mark.parametrize(
    "fingerprint",
    [
        _nested(29),
        _nested(30),  # the innermost list at depth 32, empty: allowed
        _nested(30, "1"),  # a number at depth 33
        _nested(31),
        '{"host": "' + "[{" * 40 + '"}',  # brackets in a string: counted, walked, allowed
        '{"env": {"A": ' + _nested(29, '"x"') + "}}",
        '{"env": {"A": ' + _nested(30, '"x"') + "}}",
        '{"host": "x", "distributions": {"a": "1"}, "cpu": ' + "{" * 31 + "}" * 31 + "}",
    ],
)
def test_a_deep_fingerprint_near_the_limit_is_judged_as_read_report_judges_it(fingerprint: str) -> None:
    text = dump_report(parsed(make_report()))
    reader = SharedReader()
    reader.read(text, "first.json")
    start = text.index('"fingerprint": ') + len('"fingerprint": ')
    _, end = json.JSONDecoder().raw_decode(text, start)
    bad = text[:start] + fingerprint + text[end:]
    try:
        expected = read_report(bad, "deep.json")
    except ReportError as e:
        with pytest.raises(ReportError) as got:
            reader.read(bad, "deep.json")
        assert got.value.message == e.message
    else:
        assert reader.read(bad, "deep.json") == expected


def test_a_fingerprint_section_equal_to_the_references_is_held_once() -> None:
    template = TEMPLATE.read_text("utf-8")
    reader = SharedReader()
    first = reader.read(template, "a.json")
    other = template.replace('"host": "vm"', '"host": "node-2"').replace('"OMP_NUM_THREADS"', '"X"')
    second = reader.read(other, "b.json")
    assert reader.shared == 1 and second.host == "node-2"
    assert second.fact("distributions") is first.fact("distributions")
    assert second.fingerprint is not first.fingerprint
    assert second.document["fingerprint"] is second.fingerprint
    assert second == read_report(other, "b.json")
