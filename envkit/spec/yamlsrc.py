"""Safe YAML loading that remembers where every value came from.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys and
forgets line numbers; this loader composes the node tree with a bounded
SafeLoader (:mod:`envkit._yaml`: no aliases, bounded size and depth), refuses
duplicate keys and returns a map from a value's path (``("pip", 2)``) to its
1-based line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from envkit._yaml import YamlProblem, compose_bounded, construct
from envkit.errors import Problem

__all__ = ["MAX_SPEC_BYTES", "Located", "load_located"]

MAX_SPEC_BYTES = 256 * 1024  # a spec is a page of YAML; the largest shipped one is under 1 KiB

Path = tuple[str | int, ...]
_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


@dataclass(frozen=True)
class Located:
    """Loaded YAML and the line of every key, for messages that name the line."""

    data: Any
    lines: dict[Path, int]

    def line_of(self, path: Path) -> int | None:
        """The line of ``path`` or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None


def load_located(text: str, filename: str) -> tuple[Located | None, list[Problem]]:
    """Parse ``text``; return the data with its line map, or the problems found.

    Aliases, nesting deeper than :data:`envkit._yaml.MAX_DEPTH`, files over :data:`MAX_SPEC_BYTES`
    and malformed scalars (``!!int abc``, custom tags, a list as a key) are problems with a line.
    """
    try:
        node = compose_bounded(text, max_bytes=MAX_SPEC_BYTES)
    except YamlProblem as e:
        hint = "check indentation and quoting" if e.message.startswith("YAML syntax") else None
        return None, [Problem(filename, e.line, None, e.message, hint)]
    lines: dict[Path, int] = {}
    problems: list[Problem] = []
    if node is None:
        return Located({}, lines), problems
    constructor = yaml.SafeLoader("")
    try:
        data = _convert(node, (), lines, problems, filename, constructor)
    except YamlProblem as e:
        return None, [Problem(filename, e.line, None, e.message, "quote the value to make it a string")]
    finally:
        constructor.dispose()
    return Located(data, lines), problems


def _convert(
    node: yaml.Node,
    path: Path,
    lines: dict[Path, int],
    problems: list[Problem],
    filename: str,
    constructor: yaml.SafeLoader,
) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.CollectionNode) and node.tag not in _PLAIN_TAGS:
        raise YamlProblem(f"the tag {node.tag} is not allowed in a spec", node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                raise YamlProblem(
                    "keys are plain words: complex (?) and merge (<<) keys are not allowed",
                    key_node.start_mark.line + 1,
                )
            key = construct(constructor, key_node)
            key_path = (*path, str(key))
            if key in result:
                problems.append(
                    Problem(
                        filename,
                        key_node.start_mark.line + 1,
                        ".".join(str(p) for p in key_path),
                        f"duplicate key {key!r} (first at line {lines[key_path]})",
                        "YAML keeps only the last value; remove one of them",
                    )
                )
                continue
            lines[key_path] = key_node.start_mark.line + 1
            result[key] = _convert(value_node, key_path, lines, problems, filename, constructor)
            lines[key_path] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _convert(child, (*path, i), lines, problems, filename, constructor)
            for i, child in enumerate(node.value)
        ]
    return construct(constructor, node)
