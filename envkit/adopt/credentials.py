"""What of a source's environment variables a spec may carry: never a credential.

A spec is committed, and its ``env:`` is written into the rendered Dockerfile and the image's
config, so a variable from a Dockerfile's ``ENV`` or an environment.yml's ``variables:`` is
carried only when it holds no secret. Treated as ``-i`` URLs are (:func:`without_credentials`):

- a variable whose *name* says it is a secret (``HF_TOKEN``, ``WANDB_API_KEY``,
  ``AWS_SECRET_ACCESS_KEY``, ``PIP_PASSWORD``, …) is not carried, and its value is never shown;
- every URL in a value loses its user name, password, token query parameters and anaconda.org
  ``/t/<token>/`` path; a URL with a token left in its path (Cloudsmith, Gemfury style) cannot be
  cleaned and the variable is not carried;
- a value holding a token of a published shape (``ghp_…``, ``glpat-…``, ``hf_…``, ``AKIA…``)
  is not carried.

Each is a "not carried" line saying what was dropped and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from envkit._safe import known_token, sensitive_name, urls_in
from envkit.adopt.evidence import without_credentials

__all__ = ["carry_env"]

_RUN_TIME = "pass it when the container runs (docker run -e, a build secret), never in a spec"


def carry_env(env: Mapping[str, str], where: str, lose: Callable[[str, str, str], None]) -> dict[str, str]:
    """The variables of ``env`` a spec may carry, URLs cleaned; ``lose(where, item, why)`` for the rest."""
    kept: dict[str, str] = {}
    for key, value in env.items():
        if sensitive_name(key):
            lose(where, f"ENV {key}", f"a credential by its name: its value is not carried; {_RUN_TIME}")
            continue
        if known_token(value):
            lose(where, f"ENV {key}", f"its value holds an access token: not carried; {_RUN_TIME}")
            continue
        clean, dropped = _clean_urls(value)
        if clean is None:
            lose(where, f"ENV {key}", f"a URL in its value carries {dropped}: not carried; {_RUN_TIME}")
            continue
        if dropped:
            lose(where, f"ENV {key}={value}", f"{dropped} removed from its URL; put credentials in "
                 "~/.netrc or pip's keyring, never in a spec")  # fmt: skip
        kept[key] = clean
    return kept


def _clean_urls(value: str) -> tuple[str | None, str | None]:
    """``value`` with every URL's credentials removed, and what was; ``(None, why)`` if one cannot be."""
    dropped: list[str] = []
    for url in urls_in(value):
        clean, removed = without_credentials(url)
        if clean is None:
            return None, removed
        if removed:
            dropped.append(removed)
            value = value.replace(url, clean)
    return value, "; ".join(dict.fromkeys(dropped)) or None
