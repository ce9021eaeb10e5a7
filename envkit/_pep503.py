"""PEP 503 project names, envkit's one normalizer, without ``packaging.utils`` (which imports
``packaging.tags``: platform, sysconfig).

:func:`canonicalize_name` is ``packaging.utils.canonicalize_name`` (packaging 26's own code, without
``validate``): a file audit compares names only, and ``packaging.tags`` with what it imports costs
it several milliseconds a run (tests/unit/test_pep503.py checks both agree).
"""

from __future__ import annotations

__all__ = ["canonicalize_name"]


def canonicalize_name(name: str) -> str:
    """``re.sub(r"[-_.]+", "-", name).lower()`` (PEP 503): ``Ruamel.YAML`` -> ``ruamel-yaml``."""
    value = name.lower().replace("_", "-").replace(".", "-")
    while "--" in value:
        value = value.replace("--", "-")
    return value
