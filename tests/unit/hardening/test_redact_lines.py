"""``redact`` of a long text, line by line on the lines that may hold a secret, is the whole-text scrub.

``envkit._safe.redact`` skips the lines that hold no literal any credential pattern needs (a
400-finding SARIF report: 443 of 16,489 lines are scanned). These tests hold it to
``_redact_all`` (every pattern over the whole text, the scrub as it always was) on texts built to
break it: secrets at line starts and ends, split across lines, ``Bearer``/``Basic`` before a
newline, CRLF, non-ASCII letters that IGNORECASE folds onto ASCII ones (``paſſword``), every
token shape, and a real report with secrets planted on random lines.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit import _safe
from envkit._safe import REDACTED, redact
from envkit.audit.findings import AuditFinding, AuditReport
from envkit.audit.report import render

BOUNDED = settings(max_examples=400, deadline=None, derandomize=True)

SECRETS = [
    "https://user:pa55word@host.example/simple/",
    "https://host.example/t/Tok3nValue99/pkg",
    "https://pkg.example/ABCdef0123456789xyz/simple",  # a token as a path segment
    "https://host.example/x?private_token=abc&ok=1",
    "http://h/?X-Amz-Signature=deadbeef;sig=1",
    "--token abcd1234",
    "--password=hunter2222",
    "--password hunter3333",
    "--passwd s3cr3tval",
    "-api-key=zzzzzz",
    "--API-KEY zzzzzz",
    "--db-secret s3cr3t",
    "Bearer eyJhbGciOiJIUzI1NiJ9.e30",
    "basic dXNlcjpwYXNzd29yZA==",
    "ghp_abcdefghijklmnopqrstu123",
    "github_pat_11ABCDEFG0123456789_abc",
    "hf_abcdefghijklmnopqrs",
    "npm_abcdefghijkl12",
    "glpat-abcdefghij1234",
    "xoxb-1234567890-abc",
    "sk-abcdefghijklmnop1234",
    "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdo",
    "AKIAABCDEFGHIJKLMNOP",
    "ASIAABCDEFGHIJKLMNOP",
]
FRAGMENTS = [
    *SECRETS,
    *("://", "/t/", "?", "&", ";", "=", "@", "-", "--", "_", ":", "/", "***", "'", '"', "<", ">"),
    *("token", "TOKEN", "Passw", "secret", "API", "key", "bearer", "BASIC", "sig", "auth"),
    *("\n", "\n", "\r\n", "\r", "\t", " ", "  ", "\x85", "\u2028", "\x1f"),
    *("\u017f", "\u0131", "\u0130", "\u212a", "…", "é", "漢"),  # ſ ı İ K: IGNORECASE folds them
    *("abc", "XYZ", "0123456789", "deadbeefcafe0123", "AbCdEf0123456789Gh", "host.example", "https"),
]
TEXTS = st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join)


@contextmanager
def every_length() -> Iterator[None]:
    """The line path for texts of any length (it starts at 4096 characters)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_safe, "_LINES_FROM", 0)
        yield


def _same(text: str) -> None:
    for index in (False, True):
        assert redact(text, index=index) == _safe._redact_all(text, index), text


@BOUNDED
@given(TEXTS)
def test_any_text_is_redacted_as_the_whole_text_scrub(text: str) -> None:
    with every_length():
        _same(text)


@BOUNDED
@given(st.lists(TEXTS, min_size=1, max_size=8).map("\n".join))
def test_any_multi_line_text_is_redacted_as_the_whole_text_scrub(text: str) -> None:
    with every_length():
        _same(text)


HOSTILE = [
    "Bearer\nabcdefgh12345678",  # \s+ spans the newline: redacted whole
    "x\nBASIC\n\tdXNlcjpwYXNzd29yZA==\ny",
    "ba\u017fic\nabcdefgh1234=",  # baſic: IGNORECASE matches it with basic
    "--pa\u017f\u017fword=hunter2222\nnext line",
    "line\n--pa\u017f\u017fword hunter2222\nnext line",  # only the non-ASCII letters make it a flag
    "x\n--\u017fecret s3cr3tvalue",
    "x\n-ap\u0131-key zzzzzz\ny",  # ı folds onto i
    "--\u212aey-token=abcd1234",  # K (Kelvin) folds onto k
    "line\n--token=abcd1234",  # at a line start
    "--token=abcd1234\nline",  # at a line end
    "https://user:pw@host/x\nhttps://host/t/Tok3n/x\n?token=abc",
    "https://user:pw\n@host/",  # split: neither line holds a secret
    "?tok\nen=abc",
    "/t\n/abc",
    "/t/\nabc",
    "\r\n".join(SECRETS),
    "\n".join(SECRETS) + "\n",
    "\n\n\n",
    "=" * 5000,
    "…" * 3000 + "--token=abcd1234",
    "a" * 5000 + "AKIAABCDEFGHIJKLMNOP" + "b" * 10,  # inside a word: not a token
    "x" * 4095 + "\n" + "ghp_abcdefghijklmnopqrstu123",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_texts_are_redacted_as_the_whole_text_scrub(text: str) -> None:
    _same(text)
    with every_length():
        _same(text)


def test_every_secret_is_still_redacted_in_a_long_text() -> None:
    filler = "\n".join(f'  "line {i}": "nothing to see",' for i in range(400))
    text = filler + "\n" + "\n".join(f'  "v": "{s}",' for s in SECRETS) + "\n" + filler
    assert len(text) > _safe._LINES_FROM
    out = redact(text)
    assert out == _safe._redact_all(text, False)
    assert out.count(REDACTED) >= len(SECRETS)
    for secret in ("pa55word", "Tok3nValue99", "hunter2222", "eyJhbGci", "ghp_abc", "AKIAABCD", "sk-abc"):
        assert secret not in out


def _report() -> str:
    """A SARIF-like report of 400 findings: long, ASCII (json.dumps escapes the rest), URLs in it."""
    results = [
        {
            "ruleId": f"PYSEC-2024-{i}",
            "message": {"text": f"pkg{i} 1.0: a risk-based issue … in the {i} parser. Fix: upgrade"},
            "helpUri": f"https://github.com/advisories/GHSA-{i:04d}-abcd",
            "properties": {"security-severity": "8.0", "tags": ["vulnerability"]},
        }
        for i in range(400)
    ]
    return json.dumps({"runs": [{"results": results}]}, indent=2, sort_keys=True) + "\n"


def test_a_report_takes_the_line_path_and_plants_are_caught() -> None:
    text = _report()
    starts = _safe._lines_to_redact(text)
    assert starts is not None and 0 < len(starts) < text.count("\n") / 5  # the line path, few lines
    _same(text)
    rng = random.Random(35)
    lines = text.split("\n")
    for secret in SECRETS:
        if secret.lower().startswith(("bearer", "basic")):
            continue  # these send the whole text to the whole-text scrub (tested above)
        at = rng.randrange(len(lines))
        lines[at] = lines[at][: len(lines[at]) // 2] + secret + lines[at][len(lines[at]) // 2 :]
    planted = "\n".join(lines)
    assert _safe._lines_to_redact(planted) is not None
    _same(planted)
    assert "pa55word" not in redact(planted) and "AKIAABCD" not in redact(planted)


@pytest.mark.parametrize("fmt", ["sarif", "json", "table", "markdown"])
def test_the_audit_reports_take_the_line_path(fmt: str) -> None:
    """The reports ``envkit audit -o`` writes (and the table it prints), with URLs and a planted
    secret in the advisories: the line path is taken and gives the whole-text scrub's bytes."""
    findings = tuple(
        AuditFinding(
            kind="vulnerability",
            id=f"PYSEC-2024-{i}",
            severity="high" if i % 3 else "unknown",
            message=f"pkg{i} 1.0: a risk-based flaw … in the parser"
            + (" (see https://user:pw@tracker.example/t/Tok3n/1)" if i == 7 else ""),
            fix=f"upgrade pkg{i} to 2.0 or later",
            package=f"pkg{i}",
            version="1.0",
            location="requirements.txt",
            references=(f"https://github.com/advisories/GHSA-{i:04d}-abcd", "https://osv.dev/x?a=1"),
        )
        for i in range(400)
    )
    report = AuditReport("requirements.txt", "inventory", {"service": "osv-dir"}, findings, checked=400)
    text = render(report, fmt, "low")
    assert len(text) > _safe._LINES_FROM and _safe._lines_to_redact(text) is not None
    _same(text)
    assert "user:pw@" not in redact(text) and "Tok3n" not in redact(text)


def test_the_folds_are_every_non_ascii_letter_ignorecase_matches_with_ascii() -> None:
    """If Python's IGNORECASE ever folds another character onto an ASCII letter, the line path's
    non-ASCII rule (and its Bearer/Basic guard) must learn it: this test then fails."""
    letter = re.compile("[a-z]", re.IGNORECASE)
    folds = {chr(c) for c in range(0x80, 0x110000) if letter.fullmatch(chr(c))}
    assert folds == set(_safe._ASCII_FOLDS)
