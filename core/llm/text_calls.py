"""Tool calls read out of a model's text, for models that write them instead of calling.

Small and local models often answer a tool-calling request with the call written in their
text: a ``{"tool": name, "arguments": {...}}`` object (or ``{"name": …, "arguments": …}``,
or OpenAI's own shape), a list of them, inside a ```json fence, with prose around it,
after a ``<think>…</think>`` block, with trailing commas or single quotes; or as Python
(``[finish(result="…")]``, Llama 3.2's way). This module
finds such calls; it never invents one: only calls of offered tools count, or an object
that is unmistakably a call (``{"tool": x, "arguments": {…}}`` alone), so that a model
calling a tool it does not have is told which ones it has.
"""

from __future__ import annotations

import ast
import json
import re
import uuid
from collections.abc import Collection, Iterator
from typing import Any

from core.types.chat import ToolCall

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_NAME_KEYS = ("tool", "name", "tool_name", "function", "action")
_ARG_KEYS = ("arguments", "args", "parameters", "input", "tool_input", "action_input")
_NOT_ARGS = frozenset({*_NAME_KEYS, "type", "id"})
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.-]{0,63}")
_PYTHONIC = re.compile(r"\[?\s*[A-Za-z_]\w*\(")
# Longer texts are not searched for calls (a model's answer is far shorter).
_MAX_CHARS = 100_000
_MAX_UNMATCHED = 3
_NOTHING = object()


def strip_reasoning(text: str | None) -> str:
    """``text`` without its reasoning: ``<think>…</think>`` blocks, everything before a
    lone ``</think>`` (the server's template sent the opening tag) and an unclosed
    ``<think>`` with what follows it (the answer was cut off while thinking)."""
    if not text:
        return ""
    text = _THINK.sub("", text)
    closes = list(_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opened = _OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


def loads_lenient(text: str) -> Any:
    """A JSON object or list from ``text``, repaired where that is safe: control characters
    in strings, trailing commas, Python's quoting (single quotes, True/False/None).
    Returns ``_NOTHING`` when none can be read."""
    text = text.strip()
    if not text or text[0] not in "{[":
        return _NOTHING
    for attempt in (text, _TRAILING_COMMA.sub(r"\1", text)):
        try:
            return json.loads(attempt, strict=False)
        except ValueError:
            pass
    try:
        value = ast.literal_eval(text)
        json.dumps(value)  # only what JSON can say (no sets, bytes, tuples as keys)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOTHING
    return value if isinstance(value, dict | list) else _NOTHING


def _match(text: str, start: int) -> int | None:
    """The index of the bracket closing the one at ``start`` (strings skipped), or None."""
    depth, quote, escaped = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i
    return None


def _opening(text: str, start: int) -> int:
    """The index of the next ``{`` or ``[`` from ``start``, or -1 (str.find: a regex
    character class scans ~100 times slower)."""
    found = [i for i in (text.find("{", start), text.find("[", start)) if i >= 0]
    return min(found) if found else -1


def _spans(text: str) -> Iterator[str]:
    """Every outermost ``{…}`` or ``[…]`` span of ``text``."""
    i, unmatched = 0, 0
    while (i := _opening(text, i)) >= 0 and unmatched < _MAX_UNMATCHED:
        end = _match(text, i)
        if end is not None:
            yield text[i : end + 1]
            i = end + 1
        else:
            unmatched += 1  # each costs a scan to the end: a few at most
            i += 1


def json_values(text: str) -> list[Any]:
    """The JSON values in ``text``: those of its fenced blocks when it has any that parse,
    else every outermost object or list in it."""
    text = text[:_MAX_CHARS]
    fenced = [v for body in _FENCE.findall(text) if (v := loads_lenient(body)) is not _NOTHING]
    if fenced:
        return fenced
    return [v for span in _spans(text) if (v := loads_lenient(span)) is not _NOTHING]


def _one(value: Any, names: Collection[str]) -> tuple[str, Any] | None:
    if not isinstance(value, dict):
        return None
    inner = value.get("function")
    if isinstance(inner, dict):  # OpenAI's shape: {"type": "function", "function": {...}}
        value = inner
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    args = next((value[k] for k in _ARG_KEYS if k in value), _NOTHING)
    if name is None or (name not in names and not _explicit(value, name, args)):
        return None
    if args is _NOTHING:  # {"tool": "finish", "result": "…"}: the rest are the arguments
        args = {k: v for k, v in value.items() if k not in _NOT_ARGS}
    return name, args


def _explicit(value: dict[str, Any], name: str, args: Any) -> bool:
    """``{"tool": "x", "arguments": {…}}`` and nothing else: a call even of a tool that was
    not offered (the model is told so), never an answer that happens to hold a name."""
    return (
        _IDENTIFIER.fullmatch(name) is not None
        and isinstance(args, dict)
        and set(value) - _NOT_ARGS <= set(_ARG_KEYS)
        and sum(k in value for k in ("tool", "function")) == 1
    )


def as_calls(value: Any, names: Collection[str]) -> list[tuple[str, Any]]:
    """The tool calls ``value`` stands for (one object, a list, ``{"tool_calls": […]}``),
    or none when any part of it is not a call of an offered tool."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    calls = [_one(v, names) for v in items]
    if not calls or any(c is None for c in calls):
        return []
    return [c for c in calls if c is not None]


def pythonic_calls(text: str, names: Collection[str]) -> list[tuple[str, Any]]:
    """Calls written as Python (Llama 3.2's format): ``[finish(result="Paris")]`` or
    ``finish(result="Paris")`` as the whole text, keyword arguments with literal values."""
    body = text.strip().strip("`").strip()
    if body.startswith("python\n"):
        body = body[len("python\n") :]
    if not _PYTHONIC.match(body) or len(body) > _MAX_CHARS:
        return []
    try:
        tree = ast.parse(body, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    nodes = tree.elts if isinstance(tree, ast.List) else [tree]
    found: list[tuple[str, Any]] = []
    for node in nodes:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in names
            and not node.args
        ):
            return []
        try:
            args = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
            json.dumps(args)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return []
        found.append((node.func.id, args))
    return found


def calls_in_text(text: str | None, names: Collection[str]) -> tuple[ToolCall, ...]:
    """The calls of offered tools written in ``text`` (reasoning ignored), in order."""
    clean = strip_reasoning(text)
    if not clean or not names:
        return ()
    found = [call for value in json_values(clean) for call in as_calls(value, names)]
    found = found or pythonic_calls(clean, names)
    return tuple(
        ToolCall(
            id=f"call_{uuid.uuid4().hex[:12]}",
            name=name,
            arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
        )
        for name, args in found
    )
