"""Class: secrets and terminal control characters (issue 16, items 6-8)."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit._safe import neutralise, redact, url_credentials

from .conftest import GOOD_SPEC, Run, write_spec

SECRET = "s3cr3tTOKEN"
CREDENTIAL_URLS = [
    f"https://user:{SECRET}@conda.example.com/chan",
    f"https://{SECRET}@conda.example.com/chan",
    f"https://conda.anaconda.org/t/{SECRET}/private-chan",
    f"https://conda.example.com/chan?token={SECRET}",
    f"https://conda.example.com/chan?a=1&access_token={SECRET}",
    f"https://conda.example.com/chan?X-Amz-Signature={SECRET}",
    f"http://user:{SECRET}@10.0.0.1:8080/simple",
    f"file://user:{SECRET}@host/srv/chan",
]


@pytest.mark.parametrize("url", CREDENTIAL_URLS)
def test_channels_with_credentials_are_refused_and_never_echoed(
    project: Path, envkit: Callable[..., Run], url: str
) -> None:
    write_spec(project, "creds", GOOD_SPEC.format(name="creds", description="x") + f"channels:\n  - {url}\n")
    text = envkit("validate", "creds")
    assert text.code == 2
    assert "netrc" in text.err and "credentials" in text.err
    as_json = envkit("validate", "creds", "--json")
    assert as_json.code == 2
    assert as_json.envelope()["errors"][0]["problems"][0]["field"] == "channels.0"
    for stream in (text.out, text.err, as_json.out, as_json.err):
        assert SECRET not in stream


@pytest.mark.parametrize("key", ["pypi", "conda"])
@pytest.mark.parametrize("url", CREDENTIAL_URLS[:5])
def test_mirrors_with_credentials_are_refused(
    project: Path, envkit: Callable[..., Run], key: str, url: str
) -> None:
    body = GOOD_SPEC.format(name="mirr", description="x") + f"mirrors:\n  {key}: {url}\n"
    write_spec(project, "mirr", body)
    run = envkit("validate", "mirr", "--json")
    assert run.code == 2 and SECRET not in run.out + run.err


def test_a_secret_in_an_invalid_value_is_redacted_too(project: Path, envkit: Callable[..., Run]) -> None:
    # the channel fails the syntax check (a space), and its error message quotes the value
    body = GOOD_SPEC.format(name="bad", description="x") + f'channels: ["https://u:{SECRET}@h/c x"]\n'
    write_spec(project, "bad", body)
    run = envkit("validate", "bad", "--json")
    assert run.code == 2 and SECRET not in run.out + run.err


@pytest.mark.parametrize("url", CREDENTIAL_URLS)
def test_redact_and_detect(url: str) -> None:
    assert url_credentials(url)
    assert SECRET not in redact(f"error: cannot reach {url} (timeout)")


@pytest.mark.parametrize(
    "url",
    ["https://conda.anaconda.org/conda-forge", "file:///srv/chan", "https://h/simple?page=2", "conda-forge"],
)
def test_plain_urls_are_left_alone(url: str) -> None:
    assert url_credentials(url) is None and redact(url) == url


def controls(text: str) -> list[str]:
    """Characters a terminal acts on (C0/C1 controls except newline and tab, bidi overrides)."""
    return [
        ch
        for ch in text
        if (unicodedata.category(ch) == "Cc" and ch not in "\n\t") or "\u202a" <= ch <= "\u202e"
    ]


CONTROL = ["\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "\x9b31m", "\x08\x08\x08", "\x00", "\u202eevil"]


@pytest.mark.parametrize("seq", CONTROL, ids=repr)
def test_neutralise_keeps_no_control_character(seq: str) -> None:
    shown = neutralise(f"summary {seq} end\n\tnext")
    assert controls(shown) == []
    assert shown.endswith("end\n\tnext")


@pytest.mark.parametrize("seq", CONTROL, ids=repr)
def test_hostile_advisory_summary_is_neutralised(
    tmp_path: Path, envkit: Callable[..., Run], seq: str
) -> None:
    db = tmp_path / "db" / "vulns" / "demo"
    db.mkdir(parents=True)
    record = {
        "id": "PYSEC-0000-1",
        "summary": f"evil {seq} summary",
        "affected": [{"package": {"name": "demo", "ecosystem": "PyPI"}, "versions": ["1.0"]}],
    }
    (db / "PYSEC-0000-1.json").write_text(json.dumps(record))
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("demo==1.0\n")
    for fmt in ("table", "markdown"):
        run = envkit("audit", str(freeze), "--db", str(tmp_path / "db"), "--format", fmt)
        assert run.code == 1, run.err
        assert "PYSEC-0000-1" in run.out
        assert controls(run.out + run.err) == [], fmt


@pytest.mark.parametrize("fmt", ["markdown", "sarif", "json"])
def test_written_audit_reports_carry_no_control_characters(
    tmp_path: Path, envkit: Callable[..., Run], fmt: str
) -> None:
    db = tmp_path / "db" / "vulns" / "demo"
    db.mkdir(parents=True)
    record = {
        "id": "PYSEC-0000-2",
        "summary": "evil \x1b]0;pwned\x07 summary",
        "affected": [{"package": {"name": "demo", "ecosystem": "PyPI"}, "versions": ["1.0"]}],
    }
    (db / "PYSEC-0000-2.json").write_text(json.dumps(record))
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("demo==1.0\n")
    out = tmp_path / f"report.{fmt}"
    run = envkit("audit", str(freeze), "--db", str(tmp_path / "db"), "--format", fmt, "-o", str(out))
    assert run.code == 1, run.err
    assert controls(out.read_text()) == []
