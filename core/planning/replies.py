"""Reading a structured answer out of a model's reply, however the model wrote it.

Weaker and local models rarely answer exactly as asked. A reply's JSON is taken from the
submit tool's arguments (also given as a JSON string inside the string, or with trailing
commas or single quotes), from any other tool call whose arguments fit, or from its text:
bare, in a ```json fence, with prose around it, after ``<think>…</think>`` reasoning, as a
written call ``{"tool": "submit_planner", "arguments": {…}}``, or wrapped in one key
(``{"design": {…}}``). Every candidate is tried against the schema; the first that fits
wins, otherwise the errors of the likeliest one go back to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from core.llm.base import LLMResponse
from core.llm.text_calls import json_values, loads_lenient, strip_reasoning

_WRAPPERS = ("arguments", "args", "parameters", "input", "answer", "result", "data")
_NAME_KEYS = ("tool", "name", "function")
T = TypeVar("T", bound=BaseModel)
# A single-quoted string with no quote of either kind inside.
_SINGLE = re.compile(r"'([^'\"\\\n]*)'")


class NoJSON(ValueError):
    """The reply holds no JSON object at all (a model answering in prose, or nothing)."""


def _loads(raw: str) -> Any:
    """``raw`` as JSON, leniently; a JSON string that holds JSON is opened too."""
    raw = raw.strip()
    value = loads_lenient(raw)
    if not isinstance(value, dict | list):
        value = loads_lenient(_requoted(raw)) if "'" in raw else None
    if not isinstance(value, dict | list):
        try:
            value = json.loads(raw)
        except ValueError:
            return None
    for _ in range(2):  # '"{\"path\": \"direct\"}"': JSON inside a JSON string
        if isinstance(value, str):
            inner = loads_lenient(value.strip())
            value = inner if isinstance(inner, dict | list) else value
    return value if isinstance(value, dict | list) else None


def _requoted(raw: str) -> str:
    """Single-quoted keys and strings double-quoted (``{'path': 'plan', 'answer': null}``:
    JSON's null, true and false keep Python from reading it as is)."""
    return _SINGLE.sub(lambda m: json.dumps(m.group(1)), raw)


def json_values_in(text: str | None) -> list[Any]:
    """The JSON objects and lists in ``text`` (reasoning dropped; fences first)."""
    clean = strip_reasoning(text)
    if not clean:
        return []
    whole = _loads(clean)
    if whole is not None:
        return [whole]
    found = [v for v in json_values(clean) if isinstance(v, dict | list)]
    start, end = clean.find("{"), clean.rfind("}")
    if not found and 0 <= start < end:  # in prose, and only single quotes can read it
        outer = _loads(clean[start : end + 1])
        found = [outer] if outer is not None else []
    return found


def extract_json(text: str) -> Any:
    """The JSON object in ``text``: bare, fenced, in prose, after reasoning, repaired.

    Raises :class:`NoJSON` when there is none.
    """
    values = json_values_in(text)
    for value in values:
        if isinstance(value, dict):
            return value
    if values:
        return values[0]
    raise NoJSON("no JSON object found in the reply: send one JSON object")


def _unwrapped(value: Any, tool: str) -> Iterator[Any]:
    """``value``, then what it wraps: a written call's arguments, a single key's object."""
    yield value
    if not isinstance(value, dict):
        return
    if any(value.get(k) == tool for k in _NAME_KEYS):
        for key in _WRAPPERS:
            inner = value.get(key)
            inner = _loads(inner) if isinstance(inner, str) else inner
            if isinstance(inner, dict):
                yield inner
    if len(value) == 1:
        (inner,) = value.values()
        if isinstance(inner, dict):
            yield inner


def candidates(response: LLMResponse, tool: str) -> list[Any]:
    """Every value of ``response`` that may be the answer, the likeliest first: the
    submit tool's arguments, other calls' arguments, then the JSON in the text."""
    calls = sorted(response.tool_calls, key=lambda c: c.name != tool)
    found: list[Any] = []
    for c in calls:
        args = _loads(c.arguments or "{}")
        if args is not None:
            found.extend(_unwrapped(args, tool))
    for value in json_values_in(response.content):
        found.extend(_unwrapped(value, tool))
    return found


def errors_of(exc: ValidationError) -> list[str]:
    """Pydantic's errors as lines the model can act on."""
    return [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()]


def parse(response: LLMResponse, schema: type[T], tool: str) -> T:
    """The first candidate of ``response`` that fits ``schema``.

    Raises :class:`NoJSON` when the reply has no JSON; ``ValueError`` with the errors of
    the likeliest candidate when none fits.
    """
    found = candidates(response, tool)
    if not found:
        called = [c.name for c in response.tool_calls]
        if called:
            raise ValueError(f"the arguments of {called[0]!r} are not a JSON object")
        if not strip_reasoning(response.content):
            raise NoJSON("the reply was empty: send one JSON object")
        raise NoJSON("no JSON object found in the reply: send one JSON object")
    first: ValidationError | None = None
    for value in found:
        try:
            return schema.model_validate(value)
        except ValidationError as exc:
            first = first or exc
    assert first is not None
    wrong = [c.name for c in response.tool_calls if c.name != tool]
    if wrong and not response.content:
        raise ValueError(f"you called the tool {wrong[0]!r}; answer through {tool!r}")
    raise first
