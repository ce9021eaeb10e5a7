"""Text that is safe to show and to share: credentials redacted, terminal controls neutralised.

Two jobs, used at every edge where text leaves envkit (terminal output, ``--json``
errors, inventories envkit writes):

- :func:`redact` hides credentials in URLs (``user:secret@``, anaconda.org ``/t/<token>/``
  paths, tokens as path segments (Cloudsmith, Gemfury style), ``?token=`` / ``?private_token=``
  style query parameters) and well-known token shapes (``ghp_…``, ``glpat-…``, ``hf_…``,
  ``AKIA…``) wherever they appear in a text; :func:`url_credentials` says whether one URL carries
  any (specs refuse them). ``index=True`` is stricter about path segments, for URLs that name
  a package index (whose paths hold no digests): any long run of letters and digits is a token.
- :func:`neutralise` makes terminal control characters visible (``\\x1b`` instead of an
  escape sequence that could retitle or clear the terminal); newlines and tabs stay.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "REDACTED",
    "https_url",
    "known_token",
    "markdown_text",
    "neutralise",
    "one_line",
    "printable_line",
    "redact",
    "sensitive_name",
    "url_credentials",
    "urls_in",
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
# A query parameter whose name says it holds a secret (GitLab's private_token and job_token,
# X-Amz-Security-Token, client_secret, a session id, ...), besides the exact names above.
_SENSITIVE_NAME = (
    r"[A-Za-z0-9_.-]*(?:token|secret|passw|pwd|api[_-]?key|access[_-]?key|private[_-]?key|credential"
    r"|session|signature|auth)[A-Za-z0-9_.-]*"
)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@?#]+)@")
_TOKEN_PATH = re.compile(r"(?<=/t/)[^/\s?#]+")
_QUERY = re.compile(
    r"(?P<key>[?&;](?:" + "|".join(re.escape(p) for p in _SECRET_PARAMS) + "|" + _SENSITIVE_NAME + r")=)"
    r"[^&;#\s'\"]*",
    re.IGNORECASE,
)
# Tokens by their published shapes (GitHub, GitLab, Hugging Face, npm, PyPI, Slack, OpenAI, AWS keys);
# a PyPI token is "pypi-" and a macaroon, whose base64 starts "Ag" (version 2): a file named
# pypi-freeze-host-a.txt is no token
_KNOWN_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:ghp|gho|ghu|ghs|ghr|github_pat|hf|npm)_[A-Za-z0-9_]{10,}"
    r"|(?:glpat|gldt|glptt|glrt|gloas|xox[abprs]|sk)-[A-Za-z0-9_-]{10,}"
    r"|pypi-Ag[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16})(?![A-Za-z0-9])"
)
# A URL path segment that is a token rather than a name: 16+ letters and digits with upper and
# lower case and a digit (Cloudsmith entitlement tokens, Gemfury's push/pull tokens); with
# ``index=True`` any 16+ run of letters and digits holding both (a hex token too).
_PATH_SEGMENT_TOKEN = re.compile(
    r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]{16,}\Z"
)
_INDEX_SEGMENT_TOKEN = re.compile(r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{16,}\Z")
# a secret given on a command line or in a header: --token X, --password=X, Bearer X, Basic X
_FLAG_SECRET = re.compile(
    r"(?i)((?<![A-Za-z0-9])--?(?:[a-z0-9]+-)*(?:token|password|passwd|secret|api-?key)[= ]+)"
    r"(?!\*\*\*)[^\s'\"]{4,}"
    r"|((?<![A-Za-z0-9])(?:bearer|basic)\s+)(?=[A-Za-z0-9+/._~=-]*[0-9=])[A-Za-z0-9+/._~=-]{8,}"
)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
# C0 controls except \t and \n, DEL, C1 controls; bidi overrides that reorder what is shown.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def redact(text: str, *, index: bool = False) -> str:
    """``text`` with credentials in URLs and well-known tokens replaced by ``***``.

    A long text (a SARIF report, a table) is redacted line by line, and only its lines that hold
    a literal some pattern needs (:func:`_lines_to_redact`); what it returns is what
    :func:`_redact_all` returns for the whole text (tests/unit/hardening/test_redact_lines.py).
    """
    if len(text) < _LINES_FROM:
        return _redact_all(text, index)
    starts = _lines_to_redact(text)
    if starts is None:
        return _redact_all(text, index)
    out: list[str] = []
    done = 0
    for start in starts:
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        out += [text[done:start], _redact_all(text[start:end], index)]
        done = end
    out.append(text[done:])
    return "".join(out)


def _redact_all(text: str, index: bool) -> str:
    """Every pattern over the whole ``text``: the definition of :func:`redact`."""
    if "//" in text:
        text = _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
        text = _URL.sub(lambda m: _redact_path(m[0], index), text)
    if "/t/" in text:
        text = _TOKEN_PATH.sub(REDACTED, text)
    if "=" in text:
        text = _QUERY.sub(lambda m: f"{m['key']}{REDACTED}", text)
    text = _FLAG_SECRET.sub(lambda m: f"{m[1] or m[2]}{REDACTED}", text)
    return _KNOWN_TOKEN.sub(REDACTED, text)


# Redacting line by line gives the same text because no pattern's match holds a newline, and
# their lookarounds (\b, (?<![A-Za-z0-9]), (?<=/t/), (?!\*\*\*)) see a newline as they see the
# start or end of a text; no replacement adds or removes a newline. The one exception is
# _FLAG_SECRET's "Bearer\s+token" (\s+ may span lines): a text naming bearer or basic in any
# case is redacted whole. A line that holds none of the literals below cannot match: each
# pattern needs one (a new pattern needs its literal here). The case-insensitive ones are
# searched in the lower-cased text, which finds ASCII letters only: a text holding a non-ASCII
# letter that re.IGNORECASE matches with an ASCII one (_ASCII_FOLDS: "paſſword") is redacted
# whole; no other non-ASCII character can stand for a letter of a literal.
_LINES_FROM = 4096  # shorter texts: every pattern over the text costs less than finding lines
_LITERALS = (
    b"://",  # _USERINFO, _URL
    b"/t/",  # _TOKEN_PATH
    b"=",  # _QUERY
    *(b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", b"hf_", b"npm_"),  # _KNOWN_TOKEN
    *(b"glpat-", b"gldt-", b"glptt-", b"glrt-", b"gloas-", b"xox", b"sk-", b"pypi-", b"AKIA", b"ASIA"),
)
_FLAG_WORDS = (b"-token", b"-passw", b"-secret", b"-api")  # _FLAG_SECRET's flags: "-" before the word
_HEADER_WORDS = (b"bearer", b"basic")  # _FLAG_SECRET's headers
_ASCII_FOLDS = "\u0130\u0131\u017f\u212a"  # İ ı ſ K: re.IGNORECASE matches them with i, i, s, k


def _lines_to_redact(text: str) -> list[int] | None:
    """The starts of the lines of ``text`` that may hold a secret, in order; None: redact it whole."""
    probe = text.encode("ascii", "replace")  # one byte per character ("?" for the rest): positions agree
    lowered = probe.lower()
    if any(w in lowered for w in _HEADER_WORDS):
        return None
    if not text.isascii() and any(c in text for c in _ASCII_FOLDS):
        return None
    starts: set[int] = set()
    for literal in _LITERALS:
        _add_lines(probe, literal, starts)
    for word in _FLAG_WORDS:
        _add_lines(lowered, word, starts)
    return sorted(starts)


def _add_lines(haystack: bytes, needle: bytes, starts: set[int]) -> None:
    """Add the start of each line of ``haystack`` that holds ``needle``."""
    found = haystack.find(needle)
    while found >= 0:
        starts.add(haystack.rfind(b"\n", 0, found) + 1)
        end = haystack.find(b"\n", found)
        if end < 0:
            return
        found = haystack.find(needle, end)


def _segment_token(segment: str, index: bool) -> bool:
    pattern = _INDEX_SEGMENT_TOKEN if index else _PATH_SEGMENT_TOKEN
    return pattern.match(segment) is not None or _KNOWN_TOKEN.fullmatch(segment) is not None


def _redact_path(url: str, index: bool) -> str:
    """``url`` with the path segments that are tokens replaced (scheme, host and query kept)."""
    scheme, sep, rest = url.partition("://")
    host, slash, tail = rest.partition("/")
    if not slash:
        return url
    cut = min((i for i in (tail.find("?"), tail.find("#")) if i >= 0), default=len(tail))
    parts = [REDACTED if _segment_token(p, index) else p for p in tail[:cut].split("/")]
    return f"{scheme}{sep}{host}/{'/'.join(parts)}{tail[cut:]}"


def url_credentials(url: str, *, index: bool = False) -> str | None:
    """What in ``url`` looks like a credential (a short phrase), or None when it carries none."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "an unparsable URL"
    if parts.username or parts.password or "@" in parts.netloc:
        return "a user name or password before the host"
    if _TOKEN_PATH.search(parts.path):
        return "an access token in the path (/t/<token>/)"
    if any(_segment_token(p, index) for p in parts.path.split("/")):
        return "an access token in the path"
    for key, _ in parse_qsl(parts.query, keep_blank_values=True):
        if sensitive_name(key):
            return f"a {key!r} query parameter"
    if _KNOWN_TOKEN.search(url):
        return "an access token"
    return None


def sensitive_name(name: str) -> bool:
    """Whether a query parameter or environment variable named ``name`` holds a secret by its name
    (``token``, ``private_token``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PIP_PASSWORD``, ...)."""
    return name.lower() in _SECRET_PARAMS or re.fullmatch(_SENSITIVE_NAME, name, re.IGNORECASE) is not None


def known_token(text: str) -> bool:
    """Whether ``text`` holds a token of a published shape (``ghp_…``, ``glpat-…``, ``hf_…``, ``AKIA…``)."""
    return _KNOWN_TOKEN.search(text) is not None


def urls_in(text: str) -> list[str]:
    """The ``scheme://…`` URLs in ``text``, in order."""
    return _URL.findall(text)


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
