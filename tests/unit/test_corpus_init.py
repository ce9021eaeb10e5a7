"""`envkit init --from` on the real-world corpus (tests/corpus/init, issue 34): every file stays at
least at its recorded level, nothing crashes, nothing wrong passes `validate` without a warning, and
every "carried" statement is true of the rendered files. The grader itself is checked on altered
copies of real records (a grader that cannot fail proves nothing)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.corpus._record import LEVELS, ROOT, records
from tests.corpus.grade_init import CLAIMS, Outcome, grade_outcomes, summary

KINDS = {
    "environment.yml",
    "requirements",
    "dockerfile",
    "conda-export",
    "conda-explicit",
    "pixi.toml",
    "pyproject.toml",
    "uv.lock",
}


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return grade_outcomes()


def test_the_corpus_is_real_and_recorded() -> None:
    found = list(records("init"))
    assert len(found) >= 225
    assert len([r for r in found if r.kind == "dockerfile"]) >= 126
    assert {r.kind for r in found} >= {"environment.yml", "requirements", "dockerfile"}
    for r in found:
        assert r.kind in KINDS, r.path
        assert r.level in LEVELS, r.path
        assert r.source["repo"] and r.source["path"], r.path
        assert len(str(r.source["commit"])) == 40, r.path
        assert "refused" in r.expected or "framework" in r.expected, r.path
        assert r.level == "exact" or r.disagreement, f"{r.path}: say which of envkit and expected is wrong"


def test_every_file_stays_at_least_at_its_recorded_level(outcomes: list[Outcome]) -> None:
    regressed = [
        f"{o.record.path.name}: {o.level} < {o.record.level}: {o.detail}"
        for o in outcomes
        if o.graded.regressed
    ]
    assert not regressed, "\n".join(regressed)


def test_no_crash_and_nothing_wrong_that_validate_accepts(outcomes: list[Outcome]) -> None:
    assert [o.record.path.name for o in outcomes if o.level == "crash"] == []
    assert [o.record.path.name for o in outcomes if o.silently_wrong] == []


def test_fidelity_is_at_least_95_percent_and_nothing_is_wrongly_accepted(outcomes: list[Outcome]) -> None:
    """Issue 45: >= 95 % exact-or-minor, and no wrong answer at all (a spec written where the record
    expects another or a refusal)."""
    assert [o.record.path.name for o in outcomes if o.level == "wrong"] == []
    counts = Counter(o.level for o in outcomes)
    ok = counts["exact"] + counts["minor"]
    assert ok / len(outcomes) >= 0.95, summary(o.graded for o in outcomes)


def test_every_carried_claim_is_true_of_the_rendered_files(outcomes: list[Outcome]) -> None:
    false = [f"{o.record.path.name}: {c}" for o in outcomes for c in o.false_claims]
    assert false == []
    checked = [
        o
        for o in outcomes
        if o.adoption is not None and any(c.search(n) for n in o.adoption.notes for c in CLAIMS)
    ]
    assert len(checked) >= 10  # the claim check runs on real adoptions, not on none


def _altered_copy(tmp_path: Path, name: str, change: dict[str, object]) -> Path:
    """A one-record corpus: a real file with its record's ``expected`` altered (None drops a fact)."""
    source = next(r for r in records("init") if r.path.name == name)
    target = tmp_path / "init" / source.path.parent.name
    target.mkdir(parents=True)
    shutil.copy(source.path, target / name)
    doc = yaml.safe_load(source.path.with_name(name + ".yaml").read_text(encoding="utf-8"))
    altered = {**doc["expected"], **change}
    doc["expected"] = {k: v for k, v in altered.items() if v is not None}
    (target / f"{name}.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "change", "level"),
    [
        ("nnunetv2-pancreas-conda_env.yml", {}, "exact"),
        ("nnunetv2-pancreas-conda_env.yml", {"cuda": "11.8"}, "wrong"),
        ("nnunetv2-pancreas-conda_env.yml", {"python": "3.11"}, "wrong"),
        ("nnunetv2-pancreas-conda_env.yml", {"version": "2.1.1"}, "wrong"),
        ("nnunetv2-pancreas-conda_env.yml", {"framework": "paddle"}, "wrong"),
        ("nnunetv2-pancreas-conda_env.yml", {"reported": ["something never said"]}, "minor"),
        ("nnunetv2-pancreas-conda_env.yml", {"refused": "no spec follows"}, "wrong"),
        ("bark-environment-cuda.yml", {"version": "==2.0.*"}, "exact"),
        ("demucs-environment-cuda.yml", {}, "exact"),
        ("demucs-environment-cuda.yml", {"refused": None, "framework": "torch", "cuda": "11.8"}, "refused"),
    ],
)
def test_the_grader_tells_the_levels_apart(
    tmp_path: Path, name: str, change: dict[str, object], level: str
) -> None:
    (outcome,) = grade_outcomes(_altered_copy(tmp_path, name, change))
    assert outcome.level == level, outcome.detail


def test_the_corpus_root_is_the_committed_one() -> None:
    assert (ROOT / "init").is_dir() and (ROOT / "_record.py").is_file()


def test_the_grader_adopts_through_the_use_case_the_cli_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grader measures `envkit.adopt.adopt`, the function `envkit init --from` calls: no wiring
    of its own (issue 45)."""
    import envkit.cli.init_from as cli
    import tests.corpus.grade_init as grader
    from envkit.adopt import adopt

    assert getattr(grader, "adopt") is adopt and getattr(cli, "adopt") is adopt  # noqa: B009
    calls: list[str] = []

    def spy(source: str, root: Path, options: object = None, **kw: object) -> object:
        calls.append(source)
        return adopt(source, root, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(grader, "adopt", spy)
    record = next(iter(records("init")))
    from envkit.catalog import load_catalog

    grader.grade_one(record, load_catalog())
    assert calls == [str(record.path)]


def test_no_adopted_spec_contradicts_its_own_provenance_header(outcomes: list[Outcome]) -> None:
    """What the source named (the header `envkit validate` reads) agrees with the spec written."""
    contradicted = [
        f"{o.record.path.name}: {w}"
        for o in outcomes
        for w in o.validate_warnings
        if w.startswith("the source named") and o.level in ("exact", "minor")
    ]
    assert not contradicted, "\n".join(contradicted)
