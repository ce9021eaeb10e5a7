"""Text that is safe to show and to share: credentials redacted, terminal controls neutralised.

Two jobs, used at every edge where text leaves envkit (terminal output, ``--json``
errors, inventories envkit writes):

- :func:`redact` hides credentials in URLs (``user:secret@``, anaconda.org ``/t/<token>/``
  paths, ``?token=`` style query parameters) wherever they appear in a text;
  :func:`url_credentials` says whether one URL carries any (specs refuse them).
- :func:`neutralise` makes terminal control characters visible (``\\x1b`` instead of an
  escape sequence that could retitle or clear the terminal); newlines and tabs stay.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "REDACTED",
    "https_url",
    "markdown_text",
    "neutralise",
    "one_line",
    "printable_line",
    "redact",
    "url_credentials",
]

REDACTED = "***"

# Query parameters that carry a secret in the services envkit meets (anaconda.org, Artifactory,
# S3/GCS signed URLs, generic API tokens).
_SECRET_PARAMS = (
    "token",
    "access_token",
    "auth",
    "auth_token",
    "api_key",
    "apikey",
    "key",
    "password",
    "passwd",
    "pwd",
    "secret",
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-goog-signature",
    "x-goog-credential",
)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@?#]+)@")
_TOKEN_PATH = re.compile(r"(?<=/t/)[^/\s?#]+")
_QUERY = re.compile(
    r"(?P<key>[?&;](?:" + "|".join(re.escape(p) for p in _SECRET_PARAMS) + r")=)[^&;#\s'\"]*",
    re.IGNORECASE,
)
# C0 controls except \t and \n, DEL, C1 controls; bidi overrides that reorder what is shown.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def redact(text: str) -> str:
    """``text`` with credentials in URLs replaced by ``***``."""
    if "//" in text:
        text = _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    if "/t/" in text:
        text = _TOKEN_PATH.sub(REDACTED, text)
    if "=" in text:
        text = _QUERY.sub(lambda m: f"{m['key']}{REDACTED}", text)
    return text


def url_credentials(url: str) -> str | None:
    """What in ``url`` looks like a credential (a short phrase), or None when it carries none."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "an unparsable URL"
    if parts.username or parts.password or "@" in parts.netloc:
        return "a user name or password before the host"
    if _TOKEN_PATH.search(parts.path):
        return "an access token in the path (/t/<token>/)"
    for key, _ in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in _SECRET_PARAMS:
            return f"a {key!r} query parameter"
    return None


def neutralise(text: str) -> str:
    """``text`` with terminal control characters shown as ``\\xNN`` / ``\\uNNNN`` (newline, tab kept)."""
    return _CONTROL.sub(_escape, text)


_BREAKS = str.maketrans({"\n": "\\n", "\r": "\\r", "\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def one_line(text: str) -> str:
    """``text`` for a one-line field: line breaks shown as ``\\n`` (…) and controls neutralised."""
    return neutralise(text.translate(_BREAKS))


# ASCII punctuation that makes inline markup anywhere in a line (CommonMark lets any of it be
# backslash-escaped; with ``[`` and ``]`` escaped no link or image can form, so ``(``, ``)`` and ``!``
# stay as they are); ``<``, ``>`` and ``&`` become entities (no raw HTML). ``#``, ``-``, ``+``, ``=``
# and ``1.`` only make structure at the start of a line: :func:`markdown_text` escapes them there.
_MARKDOWN = str.maketrans({**{c: "\\" + c for c in "\\`*_[]|~"}, "<": "&lt;", ">": "&gt;", "&": "&amp;"})
_LINE_BREAKS = re.compile("[\r\n\x85\u2028\u2029]+")
_LINE_START = re.compile(r"^(\s*)(?:([-+=#])|(\d+)(?=[.)]))")


def markdown_text(text: str) -> str:
    """``text`` as literal markdown on one line: no markup, no HTML, no link, no heading or list."""
    flat = neutralise(_LINE_BREAKS.sub(" ", text)).translate(_MARKDOWN)
    return _LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[2] else f"{m[1]}{m[3]}\\", flat)


def https_url(text: str) -> str | None:
    """``text`` when it is a plain ``https://host/...`` URL (a link target others may click), else None."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme != "https" or not parts.hostname or not printable_line(text) or " " in text:
        return None
    return text


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable_line(text: str) -> bool:
    """One line of printable characters (tabs allowed): no newline, NUL or other control."""
    return not any(c in text for c in "\n\r\x85\u2028\u2029") and _CONTROL.search(text) is None
