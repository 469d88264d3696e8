"""Tool arguments a model typed wrongly, set right where the tool's schema leaves no doubt.

Small models send ``"3"`` for an integer, ``42`` for a string, an object as a JSON string,
or the whole arguments as a JSON string of a JSON string. Each is fixed only when the
schema names one type for the field (``T`` or ``T | None``); anything else is left for
validation, whose error goes back to the model.
"""

from __future__ import annotations

import json
import re
from typing import Any

_INT = re.compile(r"[+-]?\d+")
_BOOLS = {"true": True, "false": False}


class NotAnObject(ValueError):
    """The arguments are not a JSON object, even read twice."""


def lone_string(schema: dict[str, Any]) -> str | None:
    """The name of a tool's only parameter when it is a string (``finish``'s ``result``)."""
    props = schema.get("properties")
    if not isinstance(props, dict) or len(props) != 1:
        return None
    name, sub = next(iter(props.items()))
    return name if isinstance(sub, dict) and sub.get("type") == "string" else None


def decode_arguments(raw: str | None, lone: str | None = None) -> dict[str, Any]:
    """The arguments of a call as an object: ``""``/``null`` are ``{}``; a JSON string
    holding a JSON object (encoded twice) is read again; for a tool whose only parameter
    ``lone`` is a string, a bare text or JSON string is that parameter. Raises
    ``json.JSONDecodeError`` (not JSON) or :class:`NotAnObject`."""
    try:
        value: Any = json.loads(raw or "{}")
    except json.JSONDecodeError:
        if lone is None or (raw or "").lstrip().startswith(("{", "[")):
            raise
        return {lone: raw}
    for _ in range(2):
        if not isinstance(value, str):
            break
        text = value.strip()
        if not text.startswith("{"):
            break
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            break
    if value is None:
        return {}
    if isinstance(value, str) and lone is not None:
        return {lone: value}
    if not isinstance(value, dict):
        raise NotAnObject("arguments must be a JSON object")
    return value


def _types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """The JSON types a property schema allows (``null`` dropped); empty when unknown."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = defs.get(ref.rsplit("/", 1)[-1], {})
    kind = schema.get("type")
    if isinstance(kind, str):
        found = {kind}
    elif isinstance(kind, list):
        found = {k for k in kind if isinstance(k, str)}
    elif "anyOf" in schema or "oneOf" in schema:
        found = set()
        for option in schema.get("anyOf") or schema.get("oneOf") or []:
            if isinstance(option, dict):
                inner = _types(option, defs)
                if not inner and option.get("type") != "null":
                    return set()  # an option of unknown type: no guessing
                found |= inner
    elif "properties" in schema:
        found = {"object"}
    else:
        found = set()
    found.discard("null")
    return found


def _fix(value: Any, kind: str) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if kind in ("object", "array"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                return value
            wanted = dict if kind == "object" else list
            return parsed if isinstance(parsed, wanted) else value
        if kind == "integer" and _INT.fullmatch(text):
            return int(text)
        if kind == "number":
            try:
                return float(text) if not _INT.fullmatch(text) else int(text)
            except ValueError:
                return value
        if kind == "boolean" and text.lower() in _BOOLS:
            return _BOOLS[text.lower()]
        return value
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def single_kinds(schema: dict[str, Any]) -> dict[str, str] | None:
    """The one JSON type of each top-level property whose schema names only one (what
    :func:`coerce` may set right); None when the schema has no properties."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return None
    defs = schema.get("$defs") or {}
    out: dict[str, str] = {}
    for name, sub in props.items():
        if isinstance(sub, dict):
            kinds = _types(sub, defs)
            if len(kinds) == 1:
                out[name] = next(iter(kinds))
    return out


def coerce(
    arguments: dict[str, Any],
    schema: dict[str, Any],
    kinds: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``arguments`` with each top-level value of one unambiguous wrong type set right
    (``kinds``: :func:`single_kinds` of ``schema``, when the caller made it already)."""
    if kinds is None:
        kinds = single_kinds(schema)
        if kinds is None:
            return arguments
    out = dict(arguments)
    for name, value in arguments.items():
        kind = kinds.get(name)
        if kind is not None:
            out[name] = _fix(value, kind)
    return out
