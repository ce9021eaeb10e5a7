"""YAML for untrusted files: safe tags only, no aliases, bounded size and depth.

``yaml.safe_load`` already refuses arbitrary objects, but an alias bomb (``a: &a [*a, *a, ...]``
nested nine times) expands to 10^9 nodes, deep nesting exhausts the recursion limit, and
constructor errors (``!!int abc``, a 5,000-digit integer, ``!!timestamp`` garbage, a list
as a mapping key) escape as ``ValueError`` / ``TypeError``. Everything here raises
:class:`YamlProblem` with the 1-based line instead.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from envkit.errors import UsageError

__all__ = [
    "ALIAS_OR_DEEP",
    "C_SAFE_LOADER",
    "DEEP",
    "MAX_DEPTH",
    "BoundedLoader",
    "YamlProblem",
    "compose_bounded",
    "construct",
    "load_bounded",
    "load_bounded_fast",
]

MAX_DEPTH = 64  # real specs, env exports and conda-lock files nest fewer than 8 levels
# What a constructor raises on a malformed scalar (int(), date parsing, base64, hashing a key).
CONSTRUCT_ERRORS = (yaml.YAMLError, ValueError, TypeError, AttributeError, OverflowError, RecursionError)
# Text the bounded loader should read (it refuses aliases and bounds depth, with a line): aliases
# (*name) and anchors (&name), which the pattern also sees in plain scalars such as conda-lock's
# ``3.10.* *_cp310`` (so load_bounded_fast checks the node tree for aliases instead), and nesting deep
# enough to strain a recursive reader (a line indented 64+ levels, flow nesting 32+ deep).
_ALIAS = r"(?:^|[\s\[{,:-])[*&][^\s\]},]"
DEEP = re.compile(r"^ {128}|[\[{]{32}", re.MULTILINE)
ALIAS_OR_DEEP = re.compile(f"{_ALIAS}|{DEEP.pattern}", re.MULTILINE)
# libyaml's SafeLoader when present (a plain SafeLoader: trusted files, or text checked as above).
C_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlProblem(UsageError):
    """A YAML document envkit refuses; ``line`` is 1-based when known. Its readers catch it and name
    the file; one that escaped would still be a usage error (exit 2), never a traceback."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that refuses aliases and nesting deeper than :data:`MAX_DEPTH`."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise YamlProblem(
                "YAML aliases (*name) are not allowed: write the value out", event.start_mark.line + 1
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise YamlProblem(f"nested deeper than {MAX_DEPTH} levels", event.start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def compose_bounded(text: str, *, max_bytes: int) -> yaml.Node | None:
    """The node tree of ``text``; raise :class:`YamlProblem` for syntax errors, aliases, size, depth."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise YamlProblem(f"the file is {size} bytes; envkit reads at most {max_bytes}", None)
    try:
        loader = BoundedLoader(text)
    except yaml.YAMLError as e:  # the reader refuses NUL and other non-printable characters up front
        raise YamlProblem(f"not YAML text: {e}".splitlines()[0], None) from e
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        message = " ".join(str(part) for part in (e.context, e.problem) if part)
        raise YamlProblem(f"YAML syntax error: {message}", mark.line + 1 if mark else None) from e
    except yaml.YAMLError as e:
        raise YamlProblem(f"YAML error: {e}", None) from e
    except RecursionError as e:  # pragma: no cover - MAX_DEPTH stops nesting long before
        raise YamlProblem("nested too deeply", None) from e
    finally:
        loader.dispose()


def construct(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """One node's value; malformed scalars and unhashable keys become :class:`YamlProblem`."""
    try:
        return loader.construct_object(node, deep=True)
    except CONSTRUCT_ERRORS as e:
        line = node.start_mark.line + 1
        lines = str(e).splitlines()
        detail = getattr(e, "problem", None) or (lines[0] if lines else type(e).__name__)
        raise YamlProblem(f"cannot read the value {_excerpt(node)}: {detail}", line) from e


def load_bounded(text: str, *, max_bytes: int) -> Any:
    """``yaml.safe_load`` with the bounds above."""
    node = compose_bounded(text, max_bytes=max_bytes)
    if node is None:
        return None
    loader = BoundedLoader("")
    try:
        return construct(loader, node)
    finally:
        loader.dispose()


def load_bounded_fast(text: str, *, max_bytes: int) -> Any:
    """:func:`load_bounded`'s result and refusals, composed by libyaml's C loader where that is safe.

    Text over ``max_bytes`` or flagged :data:`DEEP`, text the C loader rejects, and a node tree with
    an alias (a node reached twice) or nesting deeper than :data:`MAX_DEPTH` all go through
    :func:`load_bounded`, so every refusal keeps its message and line.
    """
    if len(text.encode("utf-8", errors="surrogatepass")) <= max_bytes and not DEEP.search(text):
        loader = C_SAFE_LOADER(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if _plain_tree(node):
                return loader.construct_object(node, deep=True)
        except CONSTRUCT_ERRORS:
            pass
        finally:
            loader.dispose()
    return load_bounded(text, max_bytes=max_bytes)


def _plain_tree(root: yaml.Node) -> bool:
    """No node reached twice (an alias) and none deeper than :data:`MAX_DEPTH` (the root is 1).

    Level by level, each level checked for repeats before the next is built, so an alias bomb or a
    recursive alias stops at its first repeat.
    """
    seen: set[int] = set()
    reached = 0
    level = [root]
    for _depth in range(MAX_DEPTH):
        reached += len(level)
        seen.update(map(id, level))
        if len(seen) != reached:
            return False
        below: list[yaml.Node] = []
        for node in level:
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    below.append(key)
                    below.append(value)
            elif isinstance(node, yaml.SequenceNode):
                below.extend(node.value)
        if not below:
            return True
        level = below
    return False


def _excerpt(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        value = str(node.value)
        return repr(value if len(value) <= 40 else value[:37] + "...")
    return f"at {node.tag}"
