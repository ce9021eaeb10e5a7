"""The known-bad rules read without pydantic: strict, and the same answers as the whole catalog."""

from __future__ import annotations

from typing import Any

import pytest

from envkit.catalog import Catalog, CatalogOnDemand, KnownBadRule, load_catalog
from envkit.catalog.known_bad import known_bad_hits, load_known_bad, parse_known_bad
from envkit.catalog.models import CudaRelease, InstallerFile

GOOD: dict[str, Any] = {
    "id": "torch-numpy2",
    "when": {"torch": "<2.3", "numpy": ">=2"},
    "severity": "critical",
    "message": "  torch before 2.3 and NumPy 2  ",
    "fix": "pin numpy<2",
    "source": "pytorch/pytorch#132179",
}


def test_the_packaged_rules_load_and_carry_every_field() -> None:
    rules = load_known_bad()
    assert rules and all(isinstance(r, KnownBadRule) for r in rules)
    assert all(r.id and r.when and r.message and r.fix and r.source for r in rules)
    assert load_catalog().known_bad is rules  # one reading of known_bad.yaml per process
    assert [r["id"] for r in (r.to_json() for r in rules)] == [r.id for r in rules]


def test_text_is_stripped_as_the_catalog_models_strip_it() -> None:
    (rule,) = parse_known_bad({"rules": [{**GOOD, "when": {" torch ": " <2.3 "}}]})
    assert rule.message == "torch before 2.3 and NumPy 2"
    assert dict(rule.when) == {"torch": "<2.3"}


@pytest.mark.parametrize(
    "document",
    [
        None,
        [],
        {"rules": {"id": "x"}},  # not a list
        {"rules": ["torch-numpy2"]},  # a rule that is not a mapping
        {"rules": [{**GOOD, "extra": 1}]},  # an unknown field
        {"rules": [{k: v for k, v in GOOD.items() if k != "fix"}]},  # a missing field
        {"rules": [{**GOOD, "severity": "fatal"}]},  # not a known severity
        {"rules": [{**GOOD, "id": 7}]},  # not text
        {"rules": [{**GOOD, "message": ["a", "b"]}]},
        {"rules": [{**GOOD, "when": ["torch<2.3"]}]},  # when: not a mapping
        {"rules": [{**GOOD, "when": {"torch": 2}}]},  # a specifier that is not text
        {"rules": [{**GOOD, "when": {"torch": "about 2"}}]},  # not a specifier
    ],
)
def test_a_malformed_rule_is_refused(document: Any) -> None:
    with pytest.raises(ValueError, match=r"."):
        parse_known_bad(document)


@pytest.mark.parametrize(
    "versions",
    [
        {"torch": "2.1.2+cu118", "numpy": "2.0.1"},
        {"torch": "2.4.1", "numpy": "2.0.1"},
        {"numpy": "2.0.1"},
        {"paddlepaddle": "2.6.2", "numpy": "2.0.0rc1"},
        {"paddlepaddle-gpu": "2.6.1.post120", "numpy": "2.1"},
        {"torch": "not a version", "numpy": "2.0.1"},
        {},
    ],
)
def test_the_catalog_on_demand_answers_as_the_catalog(versions: dict[str, str]) -> None:
    catalog = load_catalog()
    assert CatalogOnDemand().known_bad_hits(versions) == catalog.known_bad_hits(versions)
    assert known_bad_hits(catalog.known_bad, versions) == catalog.known_bad_hits(versions)


def test_the_catalog_on_demand_loads_the_catalog_for_cuda_and_installers() -> None:
    catalog: Catalog = load_catalog()
    lazy = CatalogOnDemand()
    for version in [*catalog.cuda_versions(), "0.1"]:
        assert lazy.cuda_release(version) == catalog.cuda_release(version)
    assert isinstance(lazy.cuda_release("12.1"), CudaRelease)
    assert lazy.installer("miniforge", "aarch64") == catalog.installer("miniforge", "aarch64")
    assert isinstance(lazy.installer("miniconda", "x86_64", "3.10"), InstallerFile)


def test_the_lazy_model_names_are_the_models_modules() -> None:
    # envkit.catalog names its pydantic models without importing them (_MODELS, for __getattr__):
    # a model added to catalog/models.py must be listed there too, or `from envkit.catalog import X` fails
    import envkit.catalog as catalog
    from envkit.catalog import models

    assert set(models.__all__) - {"PageRef"} == catalog._MODELS
    assert all(getattr(catalog, name) is getattr(models, name) for name in catalog._MODELS)
