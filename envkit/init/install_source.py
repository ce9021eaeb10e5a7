"""Where generated recipes install envkit from: a pinned source, never a bare name.

The name ``envkit`` on PyPI belongs to an unrelated project, so ``pip install envkit`` in a
team's CI would run someone else's code. envkit's distribution is :data:`DISTRIBUTION`
(free on PyPI when chosen), and the recipes ``envkit init`` writes install it from either

- a git URL at a full commit: ``envkit-dl @ git+https://HOST/ORG/envkit@<40 hex>``, or
- a wheel URL with its digest: ``envkit-dl @ https://HOST/envkit_dl-0.1.0-py3-none-any.whl#sha256=<64 hex>``

(pip checks out exactly that commit, or refuses a wheel whose sha256 differs). The default
comes from how this envkit was installed (PEP 610 ``direct_url.json``: a VCS install at a
commit, a wheel with its hash, or a git checkout with a remote).
"""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from envkit import _proc
from envkit._safe import redact, url_credentials
from envkit.errors import EnvkitError, UsageError

__all__ = ["DISTRIBUTION", "SOURCE_HINT", "default_source", "pinned_requirement"]

DISTRIBUTION = "envkit-dl"  # `pip index versions envkit-dl`: no such project on PyPI (checked 2026-11-30)
# URL characters that are safe unquoted-in-quotes in YAML, make and sh (no quotes, $, &, ;, spaces).
_U = r"[A-Za-z0-9._~/:%+=-]"
_GIT = re.compile(rf"^git\+(?:https|ssh)://(?:git@)?[A-Za-z0-9.-]+(?::\d+)?/{_U}+@[0-9a-f]{{40}}\Z")
_WHEEL = re.compile(rf"^(?:https|file)://{_U}+\.whl#sha256=[0-9a-f]{{64}}\Z")
SOURCE_HINT = (
    "pass --envkit-source git+https://HOST/ORG/envkit@<40-hex commit> or "
    "https://HOST/PATH/envkit_dl-VERSION-py3-none-any.whl#sha256=<64-hex digest>"
)


def pinned_requirement(source: str) -> str:
    """``DISTRIBUTION @ source`` after checking that ``source`` is pinned; UsageError otherwise."""
    source = source.strip()
    source = source.split(" @ ", 1)[1].strip() if " @ " in source else source
    # ssh's conventional user `git` is not a secret; any other user or password is
    found = url_credentials(source.removeprefix("git+").replace("ssh://git@", "ssh://", 1))
    if found:
        raise UsageError(
            f"the envkit source {redact(source)} carries credentials ({found})",
            hint="the recipe is committed: use a public URL, or a CI secret with git's credential helper",
        )
    if not (_GIT.match(source) or _WHEEL.match(source)):
        raise UsageError(
            f"the envkit source {redact(source)!r} is not pinned: a bare name, a branch or a tag can "
            "change under the team's CI (and `envkit` on PyPI is another project)",
            hint=SOURCE_HINT,
        )
    return f"{DISTRIBUTION} @ {source}"


def default_source() -> str | None:
    """A pinned source for the envkit that is running, or None when it cannot be told."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    raw = dist.read_text("direct_url.json")
    if not raw:
        return None  # installed from an index by name: no pinned source is known
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    url = str(info.get("url", ""))
    vcs = info.get("vcs_info") or {}
    if vcs.get("vcs") == "git" and re.fullmatch(r"[0-9a-f]{40}", str(vcs.get("commit_id", ""))):
        return _checked(f"git+{url}@{vcs['commit_id']}")
    archive = info.get("archive_info") or {}
    digest = (archive.get("hashes") or {}).get("sha256") or str(archive.get("hash", "")).removeprefix(
        "sha256="
    )
    if url.endswith(".whl") and re.fullmatch(r"[0-9a-f]{64}", digest):
        return _checked(f"{url}#sha256={digest}")
    if "dir_info" in info and url.startswith("file://"):
        return _git_checkout(Path(unquote(urlsplit(url).path)))
    return None


def _git_checkout(path: Path) -> str | None:
    """``git+<origin>@<HEAD>`` for a clean checkout with an https/ssh origin."""
    try:
        head = _proc.run(["git", "-C", str(path), "rev-parse", "HEAD"], timeout=10).stdout.strip()
        origin = _proc.run(["git", "-C", str(path), "remote", "get-url", "origin"], timeout=10).stdout.strip()
    except EnvkitError:
        return None
    if origin.startswith("git@") and ":" in origin:  # scp-like git@host:org/repo.git
        host, _, repo = origin.partition(":")
        origin = f"ssh://{host}/{repo}"
    if not origin.startswith(("https://", "ssh://")):
        return None
    return _checked(f"git+{origin}@{head}")


def _checked(source: str) -> str | None:
    try:
        pinned_requirement(source)
    except UsageError:
        return None
    return source
