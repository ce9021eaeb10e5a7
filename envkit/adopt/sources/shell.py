"""The shell of a Dockerfile ``RUN``, read as far as it can be decided without running anything.

:func:`commands` splits one ``RUN`` into the simple commands a shell would run, in order:

- variables are expanded from ``ARG``/``ENV`` defaults and from assignments made earlier in the
  same ``RUN`` (``CU=121 && pip install torch==2.2.0+cu${CU}``, ``export V=1; ...``);
- ``if``/``elif``/``else``/``fi`` are followed: a condition made of literals once expanded
  (``[ "2.2.0" == "2.1.0" ]``, ``[ -n "" ]``, ``[ false == true ]``, ``true``) is decided, the
  branch taken is read and the others skipped; each decision is one :class:`Branch` (which branch
  was read, and where) so the caller can say so;
- a condition that cannot be decided (a file test, a command's output, an unset variable) makes
  its branches :attr:`Command.undecided`: the caller reports them, or refuses when they install a
  framework.
"""

from __future__ import annotations

import re
import shlex
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Branch", "Command", "commands"]

OPERATORS = {"&&", "||", ";", "|", "&"}
# one line: a value holding a newline is not read as an assignment
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z")
_KEYWORDS = {"if", "then", "elif", "else", "fi"}

Expand = Callable[[str, Mapping[str, str]], str]


@dataclass(frozen=True)
class Command:
    """One simple command: its words, the operator after it, and whether it runs under a condition
    envkit could not decide (then ``undecided`` is that condition, as written)."""

    argv: list[str]
    separator: str
    undecided: str = ""


@dataclass(frozen=True)
class Branch:
    """A decided ``if``: the condition of the branch read (``else`` when none held), as expanded."""

    read: str


@dataclass
class _Frame:
    taken: bool = False  # a branch of this if has been decided true
    state: bool | None = False  # the current branch: runs, skipped, or undecided
    condition: str = ""
    undecided: bool = False  # some earlier condition of this if was undecided


def _words(text: str) -> list[tuple[str, str]]:
    """(word, operator after it or "") as the shell splits them; ValueError on unbalanced quotes."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return [(token, "") for token in lexer]


def commands(
    run: str, values: Mapping[str, str], expand: Expand
) -> tuple[list[Command], list[Branch], list[Command]]:
    """The commands of ``run`` in order (see the module doc), the decided ``if``s, and the commands of
    the branches not read (expanded as far as the scope allows); ValueError on unbalanced quotes."""
    local: dict[str, str] = {}
    scope = ChainMap(local, dict(values))
    raw: list[tuple[list[str], str]] = [([], "")]
    for token, _ in _words(run):
        if token in OPERATORS:
            raw[-1] = (raw[-1][0], token)
            raw.append(([], ""))
        else:
            raw[-1][0].append(token)
    out: list[Command] = []
    branches: list[Branch] = []
    skipped: list[Command] = []
    stack: list[_Frame] = []
    for words, separator in raw:
        words = _keywords(words, stack, scope, expand, branches)
        if not words:
            continue
        if any(f.state is False for f in stack):
            skipped.append(
                Command([w for word in words for w in _split(expand(word, scope), word)], separator)
            )
            continue
        undecided = next((f.condition for f in stack if f.state is None), "")
        argv = [w for word in words for w in _split(expand(word, scope), word)]
        assigned = _assignments(argv)
        if assigned is not None and not undecided:
            local.update(assigned)
            continue
        out.append(Command(argv, separator, undecided))
    return out, branches, skipped


def _split(expanded: str, word: str) -> list[str]:
    """An expanded word is split on whitespace when a variable made it (the shell's word splitting
    of an unquoted ``$X``; quotes are gone by now, so a quoted one is split too)."""
    return expanded.split() if "$" in word and expanded != word else [expanded]


def _assignments(argv: list[str]) -> dict[str, str] | None:
    """``A=1 B=2`` or ``export A=1``: the variables set; None when the command is not only that."""
    words = argv[1:] if argv[:1] == ["export"] else argv
    pairs = [_ASSIGNMENT.match(w) for w in words]
    if not words or not all(pairs):
        return None
    return {m[1]: m[2] for m in pairs if m}


def _keywords(
    words: list[str],
    stack: list[_Frame],
    scope: Mapping[str, str],
    expand: Expand,
    branches: list[Branch],
) -> list[str]:
    """Follow ``if``/``then``/``elif``/``else``/``fi`` at the head of ``words``; the rest is a command."""
    while words and words[0] in _KEYWORDS:
        keyword, words = words[0], words[1:]
        if keyword == "if":
            outer_dead = any(f.state is False for f in stack)
            frame = _Frame()
            stack.append(frame)
            _decide(frame, words, scope, expand, branches, dead=outer_dead)
            return []
        if not stack:
            return [keyword, *words]  # a stray keyword: left to the caller as a command
        frame = stack[-1]
        if keyword == "elif":
            _decide(frame, words, scope, expand, branches, dead=any(f.state is False for f in stack[:-1]))
            return []
        if keyword == "else":
            frame.state = False if frame.taken else (None if frame.undecided else True)
            frame.condition = frame.condition if frame.undecided else "else"
            if frame.state and not any(f.state is False for f in stack[:-1]):
                branches.append(Branch("else"))
        elif keyword == "fi":
            stack.pop()
    return words


def _decide(
    frame: _Frame,
    words: list[str],
    scope: Mapping[str, str],
    expand: Expand,
    branches: list[Branch],
    *,
    dead: bool,
) -> None:
    shown = " ".join(expand(w, scope) for w in words)
    if frame.taken:
        frame.state = False
        return
    if frame.undecided:
        frame.state, frame.condition = None, frame.condition
        return
    truth = condition([expand(w, scope) for w in words])
    if truth is None:
        frame.state, frame.undecided, frame.condition = None, True, shown
    elif truth:
        frame.state, frame.taken = True, True
        if not dead:
            branches.append(Branch(shown))
    else:
        frame.state = False


def condition(argv: list[str]) -> bool | None:
    """The truth of a test made of literals (``[ a == b ]``, ``[[ -n x ]]``, ``test -z ""``, ``true``,
    ``false``, ``!``), or None when it cannot be decided without running anything."""
    if any("$" in a or "`" in a for a in argv):
        return None
    if argv[:1] == ["!"]:
        inner = condition(argv[1:])
        return None if inner is None else not inner
    if argv in (["true"], [":"]):
        return True
    if argv == ["false"]:
        return False
    if argv[:1] == ["test"]:
        return _test(argv[1:])
    if argv[:1] == ["["] and argv[-1:] == ["]"]:
        return _test(argv[1:-1])
    if argv[:1] == ["[["] and argv[-1:] == ["]]"]:
        return _test(argv[1:-1])
    return None


def _test(args: list[str]) -> bool | None:
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2 and args[0] in ("-n", "-z"):
        return (args[1] != "") == (args[0] == "-n")
    if len(args) == 2 and args[0] == "!":
        inner = _test(args[1:])
        return None if inner is None else not inner
    if len(args) == 3 and args[1] in ("=", "=="):
        return args[0] == args[2] if not _pattern(args[2]) else None
    if len(args) == 3 and args[1] == "!=":
        return args[0] != args[2] if not _pattern(args[2]) else None
    return None  # -f FILE, -eq, &&, a glob: decided by the running image only


def _pattern(word: str) -> bool:
    return any(c in word for c in "*?[")
