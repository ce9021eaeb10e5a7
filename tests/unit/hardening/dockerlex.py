"""A small port of Docker's Dockerfile word lexer (moby/buildkit frontend/dockerfile/shell/lex.go),
enough to read ENV and LABEL instructions back the way the engine does: words split on
unquoted whitespace, ``"..."`` (escapes only ``\\"``, ``\\$``, ``\\\\``; ``$VAR`` expanded),
``'...'`` literal, an unquoted backslash escapes the next character."""

from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def instructions(dockerfile: str, keyword: str) -> list[str]:
    """The argument text of every ``keyword`` instruction (line continuations joined)."""
    joined = re.sub(r"\\\n", "", dockerfile)
    return [line[len(keyword) + 1 :] for line in joined.splitlines() if line.startswith(keyword + " ")]


def _dollar(text: str, i: int, env: dict[str, str]) -> tuple[str, int]:
    if i + 1 < len(text) and text[i + 1] == "{":
        end = text.index("}", i)
        return env.get(text[i + 2 : end], ""), end + 1
    match = _NAME.match(text, i + 1)
    if not match:
        return "$", i + 1
    return env.get(match[0], ""), match.end()


def words(text: str, env: dict[str, str]) -> list[str]:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        word: list[str] = []
        while i < n and text[i] not in " \t":
            ch = text[i]
            if ch == '"':
                i += 1
                while text[i] != '"':
                    if text[i] == "\\" and i + 1 < n and text[i + 1] in '"$\\':
                        word.append(text[i + 1])
                        i += 2
                    elif text[i] == "$":
                        value, i = _dollar(text, i, env)
                        word.append(value)
                    else:
                        word.append(text[i])
                        i += 1
                i += 1
            elif ch == "'":
                end = text.index("'", i + 1)
                word.append(text[i + 1 : end])
                i = end + 1
            elif ch == "\\" and i + 1 < n:
                word.append(text[i + 1])
                i += 2
            elif ch == "$":
                value, i = _dollar(text, i, env)
                word.append(value)
            else:
                word.append(ch)
                i += 1
        out.append("".join(word))
    return out


def key_values(dockerfile: str, keyword: str, base_env: dict[str, str]) -> dict[str, str]:
    """What ``ENV``/``LABEL`` instructions set, in order, as the engine reads them."""
    env = dict(base_env)
    found: dict[str, str] = {}
    for args in instructions(dockerfile, keyword):
        for word in words(args, env):
            key, sep, value = word.partition("=")
            assert sep, f"{keyword} word without '=': {word!r}"
            found[key] = value
            if keyword == "ENV":
                env[key] = value
    return found
