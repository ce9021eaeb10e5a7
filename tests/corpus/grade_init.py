"""Grade ``envkit init --from`` on the init corpus (``tests/corpus/init/<kind>/``).

Each record's file is adopted by the use case the CLI calls (:func:`envkit.adopt.adopt`, into a
temporary project), the written spec is read back exactly as ``envkit validate`` reads it
(:func:`envkit.spec.load.load_spec`: problems refuse, warnings are kept), and its facts are
compared with the record's hand-written ``expected``:

- **exact**: every fact equal. A record whose ``expected`` is ``refused: <why>`` is exact when
  envkit refuses cleanly (no buildable spec follows from the source).
- **minor**: the essential facts are equal; only non-essential ones differ. Counted as minor:
  a thing the record says must be reported (``reported:``, a substring of the not-carried lines,
  notes or warnings) that the output does not name, and a "carried" statement that is not true of
  the rendered files (:func:`claims`; tests/unit/test_corpus_init.py keeps those at 0).
- **wrong**: framework, version, CUDA flavour or Python differs, or a framework is lost with a spec
  written (exit 0), or a spec is written where the record says no buildable one follows.
- **refused**: envkit refused cleanly (an :class:`~envkit.errors.EnvkitError`) where the record
  expects a spec.
- **crash**: any other exception.

Expected facts: ``framework`` (torch | paddle | none), ``version`` (an exact release such as
``2.1.2``, or a PEP 440 specifier such as ``==2.0.*`` where the source pins a range and any
release in it is a faithful reading), ``cuda`` (``11.8``, ``cpu``, or ``pypi``: the CUDA of the
plain PyPI wheel of the chosen release), ``python`` (``3.10``, or null: not stated by the source,
any Python the chosen release publishes wheels for is faithful).

``python -m tests.corpus.grade_init`` prints the table per class and per kind.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envkit.adopt import adopt
from envkit.adopt.adoption import Adoption
from envkit.catalog import Catalog, load_catalog
from envkit.errors import EnvkitError
from envkit.render.conda_env import environment_yml, requirements_txt
from envkit.render.pip import pip_lines
from envkit.spec.load import load_spec
from envkit.spec.models import Spec
from envkit.spec.resolve import resolve_spec
from tests.corpus._record import LEVELS, ROOT, Graded, Level, Record, records

__all__ = ["CLAIMS", "Outcome", "claims", "grade_all", "grade_outcomes", "summary"]

SURFACE = "init"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One record adopted: its level, why, and what the written spec and ``validate`` said."""

    record: Record
    level: Level
    detail: str
    spec: Spec | None = None
    adoption: Adoption | None = None
    validate_warnings: tuple[str, ...] = ()
    false_claims: tuple[str, ...] = ()

    @property
    def graded(self) -> Graded:
        return Graded(self.record, self.level, self.detail)

    @property
    def silently_wrong(self) -> bool:
        """A wrong spec that ``envkit validate`` accepts without a warning."""
        return self.level == "wrong" and self.spec is not None and not self.validate_warnings


def grade_all(root: Path = ROOT) -> list[Graded]:
    """Every init record of the corpus, graded."""
    return [o.graded for o in grade_outcomes(root)]


def grade_outcomes(root: Path = ROOT) -> list[Outcome]:
    catalog = load_catalog()
    return [grade_one(record, catalog) for record in records(SURFACE, root)]


def grade_one(record: Record, catalog: Catalog) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="envkit-corpus-") as tmp:
        project = Path(tmp)
        try:
            adopted = adopt(str(record.path), project, catalog=catalog)
            adoption = adopted.adoption
            loaded = load_spec(adopted.path, catalog)
        except EnvkitError as e:
            return _refused(record, f"{e.message} (hint: {e.hint})" if e.hint else e.message)
        except Exception as e:  # noqa: BLE001 - a crash is a level of its own
            return Outcome(record, "crash", f"{type(e).__name__}: {e}")
    return _compare(record, adoption, loaded.spec, tuple(loaded.warnings), catalog)


def _refused(record: Record, why: str) -> Outcome:
    if "refused" in record.expected:
        return Outcome(record, "exact", f"refused as expected: {why}")
    return Outcome(record, "refused", why)


def _compare(
    record: Record, adoption: Adoption, spec: Spec, warnings: tuple[str, ...], catalog: Catalog
) -> Outcome:
    expected = record.expected
    false_claims = tuple(claims(adoption, spec, catalog))
    base = {"spec": spec, "adoption": adoption, "validate_warnings": warnings, "false_claims": false_claims}
    if "refused" in expected:
        why = f"wrote {_facts(spec)}; expected a refusal: {expected['refused']}"
        return Outcome(record, "wrong", why, **base)  # type: ignore[arg-type]
    problems = _essential(expected, spec, catalog)
    if problems:
        return Outcome(record, "wrong", f"{'; '.join(problems)} (wrote {_facts(spec)})", **base)  # type: ignore[arg-type]
    minor = _non_essential(expected, adoption) + [f"false claim: {c}" for c in false_claims]
    if minor:
        return Outcome(record, "minor", "; ".join(minor), **base)  # type: ignore[arg-type]
    return Outcome(record, "exact", _facts(spec), **base)  # type: ignore[arg-type]


def _facts(spec: Spec) -> str:
    frameworks = ", ".join(f"{k} {v}" for k, v in spec.frameworks.items()) or "no framework"
    return f"{frameworks}, cuda {spec.cuda}, python {spec.python}"


def _essential(expected: Mapping[str, Any], spec: Spec, catalog: Catalog) -> list[str]:
    problems: list[str] = []
    frameworks = dict(spec.frameworks.items())
    framework = str(expected.get("framework", "none"))
    if framework == "none":
        if frameworks:
            problems.append(f"expected no framework, got {sorted(frameworks)}")
        version = None
    elif framework not in frameworks:
        return [f"{framework} lost (exit 0)"]
    else:
        version = frameworks[framework]
        wanted = str(expected.get("version", ""))
        if wanted and not _version_matches(version, wanted):
            problems.append(f"{framework} {version}, expected {wanted}")
        elif wanted[:1] in "<>=!~" and catalog.framework_release(framework, version) is None:
            problems.append(
                f"{framework} {version} is no release the catalog knows (expected one in {wanted})"
            )
    release = catalog.framework_release(framework, version) if version else None
    cuda = str(expected.get("cuda", "cpu"))
    if cuda == "pypi":
        cuda = (release.pypi_cuda if release else None) or "?"
    if spec.cuda != cuda:
        problems.append(f"cuda {spec.cuda}, expected {cuda}")
    python = expected.get("python")
    if python is not None and spec.python != str(python):
        problems.append(f"python {spec.python}, expected {python}")
    if python is None and release is not None and spec.python not in release.python:
        problems.append(f"python {spec.python}: {framework} {version} has no wheel for it")
    return problems


def _version_matches(version: str, wanted: str) -> bool:
    try:
        if wanted[:1] in "<>=!~":
            return Version(version) in SpecifierSet(wanted)
        return Version(version).public == Version(wanted).public
    except (InvalidSpecifier, InvalidVersion):
        return version == wanted


def _non_essential(expected: Mapping[str, Any], adoption: Adoption) -> list[str]:
    said = " | ".join(
        [*adoption.notes, *adoption.warnings, *(f"{x.item}: {x.why}" for x in adoption.lost)]
    ).lower()
    return [
        f"{item!r} not reported" for item in expected.get("reported") or () if str(item).lower() not in said
    ]


_INSTALLS = re.compile(r": a framework's index: frameworks: installs (?P<req>\S+) from (?P<index>\S+)$")
_AS_CUDA = re.compile(r': carried as cuda: "(?P<cuda>[^"]+)"')
_MOVED = re.compile(r"moved to pip as (?P<req>\S+)$")
CLAIMS = (_INSTALLS, _AS_CUDA, _MOVED)
"""The statements of what an adoption carried that :func:`claims` checks against the rendered files."""


def _plumbing_agrees(pin: str, cuda: str) -> bool:
    """A conda CUDA-plumbing pin (as written) agrees with the spec's CUDA: ``cpuonly`` and a cpu
    ``pytorch-mutex`` with cpu, a cuda ``pytorch-mutex`` with any CUDA, ``pytorch-cuda=11.7(.0)`` /
    ``cudatoolkit==11.3.*`` with that CUDA; a pin naming none (``cudatoolkit``) with any."""
    bare = pin.split("::", 1)[-1]
    if bare.startswith("cpuonly") or (bare.startswith("pytorch-mutex") and bare.endswith("cpu")):
        return cuda == "cpu"
    if bare.startswith("pytorch-mutex"):
        return cuda != "cpu"
    named = re.match(r"^(?:pytorch-cuda|cudatoolkit)\s*=*\s*(\d+)\.(\d+)", bare)
    return named is None or f"{int(named[1])}.{named[2]}" == cuda


def claims(adoption: Adoption, spec: Spec, catalog: Catalog) -> Iterable[str]:
    """What the adoption says it carried that the rendered files (``environment.yml`` and
    ``requirements.txt`` of the written spec, as ``envkit build`` renders them before a lock) do not
    hold. Every "carried" statement is checked; one this function cannot check is reported too.

    - "URL (...): a framework's index: frameworks: installs REQ from INDEX|PyPI": REQ is a rendered
      pip line, and INDEX a rendered pip option (PyPI: REQ needs no index);
    - 'PIN (...): carried as cuda: "X"': the spec's CUDA is X;
    - "PIN (...): ... moved to pip as REQ": REQ is a rendered pip line;
    - every conda and pip pin the adoption counts as carried is in the rendered files.
    """
    resolved = resolve_spec(spec, catalog)
    pip = pip_lines(resolved)
    rendered = environment_yml(resolved, "") + requirements_txt(resolved, "")
    options = " ".join(line for line in pip if line.startswith("--"))
    for note in adoption.notes:
        installs, as_cuda, moved = _INSTALLS.search(note), _AS_CUDA.search(note), _MOVED.search(note)
        if installs:
            index = installs["index"]
            if installs["req"] not in pip or (index != "PyPI" and index not in options):
                yield note
        elif as_cuda:
            if as_cuda["cuda"] != spec.cuda or not _plumbing_agrees(note.split(" (", 1)[0], spec.cuda):
                yield note
        elif moved:
            if moved["req"] not in pip:
                yield note
        elif re.search(r"(?<!not )carried", note):
            yield f"a claim this test cannot check: {note}"
    for pin in [*adoption.pins.get("conda", ()), *adoption.pins.get("pip", ())]:
        if pin not in rendered:
            yield f"{pin}: counted as carried, not in the rendered files"


def summary(graded: Iterable[Graded]) -> str:
    """A text table: levels per class and per kind, and the total."""
    graded = list(graded)
    lines = [f"{'':24}" + "".join(f"{level:>8}" for level in LEVELS) + f"{'ok %':>8}"]

    def row(name: str, items: list[Graded]) -> str:
        counts = Counter(g.level for g in items)
        ok = counts["exact"] + counts["minor"]
        pct = 100 * ok / len(items) if items else 0.0
        return f"{name:24}" + "".join(f"{counts[level]:>8}" for level in LEVELS) + f"{pct:>7.0f}%"

    classes = sorted({k for g in graded for k in g.record.klass.split(",")}, key=lambda k: (len(k), k))
    lines += [row(f"class {k}", [g for g in graded if k in g.record.klass.split(",")]) for k in classes]
    kinds = sorted({g.record.kind for g in graded})
    lines += [row(f"kind {kind}", [g for g in graded if g.record.kind == kind]) for kind in kinds]
    lines.append(row("all", graded))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    outcomes = grade_outcomes()
    for o in outcomes:
        if "-v" in argv or o.level != o.record.level:
            rel = o.record.path.relative_to(ROOT)
            print(f"{o.level:8} (recorded {o.record.level}) {rel}: {o.detail}")
    print(summary(o.graded for o in outcomes))
    print(f"silently wrong (validate accepts without a warning): {sum(o.silently_wrong for o in outcomes)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
