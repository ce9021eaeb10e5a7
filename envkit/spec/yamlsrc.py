"""Safe YAML loading that remembers where every value came from.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys and
forgets line numbers; this loader composes the node tree with
``yaml.SafeLoader``, refuses duplicate keys and returns a map from a value's
path (``("pip", 2)``) to its 1-based line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from envkit.errors import Problem

__all__ = ["Located", "load_located"]

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Located:
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
    """Parse ``text``; return the data with its line map, or the problems found."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        msg = " ".join(str(part) for part in (e.context, e.problem) if part)
        return None, [
            Problem(filename, line, None, f"YAML syntax error: {msg}", "check indentation and quoting")
        ]
    except yaml.YAMLError as e:
        return None, [Problem(filename, None, None, f"YAML error: {e}")]
    lines: dict[Path, int] = {}
    problems: list[Problem] = []
    if node is None:
        return Located({}, lines), problems
    constructor = yaml.SafeLoader(text)
    try:
        data = _convert(node, (), lines, problems, filename, constructor)
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
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = constructor.construct_object(key_node, deep=True)
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
    return constructor.construct_object(node, deep=True)
