"""Build a pydantic arguments model and a description from a function's signature."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Google-style docstring → (description, {argument: description}).

    The description is every line outside the ``Args:`` section, joined into one paragraph.
    """
    if not doc:
        return "", {}
    summary: list[str] = []
    args: dict[str, str] = {}
    in_args = False
    arg_indent: int | None = None
    current: str | None = None
    for line in inspect.cleandoc(doc).splitlines():
        indent = len(line) - len(line.lstrip())
        if _ARGS_HEADER.match(line):
            in_args, arg_indent, current = True, None, None
            continue
        if in_args and line.strip() and indent == 0:
            in_args = False
        if not in_args:
            summary.append(line)
            continue
        if not line.strip():
            continue
        match = _ARG_LINE.match(line)
        if match and (arg_indent is None or indent == arg_indent):
            arg_indent = indent
            current = match.group(1)
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}"
    return " ".join(" ".join(summary).split()), args


def arguments_model(fn: Callable[..., Any], name: str, skip_first: bool) -> type[BaseModel]:
    """A pydantic model of ``fn``'s parameters (minus the context), forbidding extras."""
    hints = get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())
    if skip_first:
        params = params[1:]
    _, arg_docs = parse_docstring(fn.__doc__)
    fields: dict[str, Any] = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args/**kwargs are not supported")
        if p.name not in hints:
            raise TypeError(f"tool {name}: parameter {p.name!r} needs a type hint")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=arg_docs.get(p.name)))
    return create_model(  # type: ignore[call-overload,no-any-return]
        f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields
    )


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keys, but never a property named ``title``."""
    if isinstance(node, dict):
        return {
            k: (
                {name: _strip_titles(sub) for name, sub in v.items()}
                if k == "properties" and isinstance(v, dict)
                else _strip_titles(v)
            )
            for k, v in node.items()
            if k != "title"
        }
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    return schema
