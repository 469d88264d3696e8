"""A form a person fills in for an MCP server (elicitation): its fields, read from the
server's ``requestedSchema`` (a flat object of strings, numbers, booleans and enums, as
the 2026 MCP spec allows), and the check of what a person typed against them.

Adapters render the fields (a Slack modal, a Discord modal, a web form, console
prompts) and hand back what was typed; :func:`check` turns it into the content the
server gets, or says in plain words what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, Literal, NamedTuple

from core.types._base import Frozen

FieldKind = Literal["text", "number", "integer", "boolean", "choice", "choices"]
# What an adapter hands back per field: typed text, a checkbox, picked options, nothing.
Typed = str | bool | list[str] | None
Value = str | int | float | bool | list[str]
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class Problem(NamedTuple):
    """What is wrong with field ``field``, in plain words naming it."""

    field: str
    text: str


class Option(Frozen):
    value: str
    label: str


class FormField(Frozen):
    """One field: ``name`` (the schema's key, what the server reads), ``label`` (its
    title, else the name), ``kind``, ``required``, ``options`` for choices, limits."""

    name: str
    label: str
    kind: FieldKind
    description: str = ""
    required: bool = False
    options: tuple[Option, ...] = ()
    default: Value | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None


def _options(prop: Mapping[str, Any]) -> tuple[Option, ...]:
    """An enum's options, titled (``oneOf``/``anyOf`` of const+title, legacy
    ``enumNames``) or not."""
    titled = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(titled, list):
        return tuple(
            Option(value=str(o["const"]), label=str(o.get("title") or o["const"])) for o in titled
        )
    values = [str(v) for v in prop.get("enum") or ()]
    names = prop.get("enumNames") or values
    return tuple(Option(value=v, label=str(n)) for v, n in zip(values, names, strict=False))


def _field(name: str, prop: Mapping[str, Any], required: bool) -> FormField:
    kind_of = prop.get("type")
    options: tuple[Option, ...] = ()
    if kind_of == "array":
        kind: FieldKind = "choices"
        options = _options(prop.get("items") or {})
    elif "enum" in prop or "oneOf" in prop or "anyOf" in prop:
        kind, options = "choice", _options(prop)
    elif kind_of in ("number", "integer", "boolean"):
        kind = "boolean" if kind_of == "boolean" else kind_of
    else:
        kind = "text"
    return FormField(
        name=name,
        label=str(prop.get("title") or name),
        kind=kind,
        description=str(prop.get("description") or ""),
        required=required,
        options=options,
        default=prop.get("default"),
        minimum=prop.get("minimum", prop.get("minItems")),
        maximum=prop.get("maximum", prop.get("maxItems")),
        min_length=prop.get("minLength"),
        max_length=prop.get("maxLength"),
        format=prop.get("format"),
    )


def fields_of(schema: Mapping[str, Any] | None) -> tuple[FormField, ...]:
    """The form's fields, in the schema's order (none for a URL-mode request)."""
    if not schema:
        return ()
    required = set(schema.get("required") or ())
    props = schema.get("properties") or {}
    return tuple(_field(n, p or {}, n in required) for n, p in props.items())


def _number(f: FormField, text: str) -> tuple[Value | None, str]:
    try:
        value: int | float = int(text) if f.kind == "integer" else float(text)
    except ValueError:
        word = "a whole number" if f.kind == "integer" else "a number"
        return None, f"{f.label} must be {word}."
    if f.minimum is not None and value < f.minimum:
        return None, f"{f.label} must be at least {f.minimum:g}."
    if f.maximum is not None and value > f.maximum:
        return None, f"{f.label} must be at most {f.maximum:g}."
    return value, ""


def _text(f: FormField, text: str) -> tuple[Value | None, str]:
    if f.min_length is not None and len(text) < f.min_length:
        return None, f"{f.label} needs at least {f.min_length} characters."
    if f.max_length is not None and len(text) > f.max_length:
        return None, f"{f.label} takes at most {f.max_length} characters."
    if f.format == "email" and not _EMAIL.match(text):
        return None, f"{f.label} must be an email address."
    if f.format == "uri" and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$", text):
        return None, f"{f.label} must be a link (such as https://example.com)."
    try:
        if f.format == "date":
            date.fromisoformat(text)
        elif f.format == "date-time":
            datetime.fromisoformat(text)
    except ValueError:
        shape = "2026-11-27" if f.format == "date" else "2026-11-27T14:30:00"
        return None, f"{f.label} must be a date like {shape}."
    return text, ""


def _one(f: FormField, raw: Typed) -> tuple[Value | None, str]:
    """One field's value, or why it is wrong ("" when there is nothing to say)."""
    if f.kind == "boolean":
        if isinstance(raw, str):
            return raw.strip().lower() in ("true", "yes", "y", "on", "1"), ""
        return bool(raw), ""
    if f.kind == "choices":
        picked = [raw] if isinstance(raw, str) else (raw if isinstance(raw, list) else [])
        allowed = {o.value for o in f.options}
        if any(p not in allowed for p in picked):
            return None, f"{f.label}: pick from the options given."
        if f.minimum is not None and len(picked) < f.minimum:
            return None, f"{f.label}: pick at least {f.minimum:g}."
        if f.maximum is not None and len(picked) > f.maximum:
            return None, f"{f.label}: pick at most {f.maximum:g}."
        return picked, ""
    text = raw.strip() if isinstance(raw, str) else ""
    if f.kind == "choice":
        if text not in {o.value for o in f.options}:
            return None, f"{f.label}: pick one of {', '.join(o.label for o in f.options)}."
        return text, ""
    if f.kind in ("number", "integer"):
        return _number(f, text)
    return _text(f, text)


def _empty(raw: Typed) -> bool:
    return raw is None or (isinstance(raw, str | list) and not raw and raw is not False)


def check(
    fields: tuple[FormField, ...], typed: Mapping[str, Typed]
) -> tuple[dict[str, Value], list[Problem]]:
    """What a person typed, as the server's content, and the problems in plain words
    (each naming its field); the content counts only when there are none."""
    content: dict[str, Value] = {}
    problems: list[Problem] = []
    for f in fields:
        raw = typed.get(f.name)
        if isinstance(raw, str):
            raw = raw.strip()
        if _empty(raw) and f.kind != "boolean":
            if f.required:
                problems.append(Problem(f.name, f"{f.label} is required."))
            continue
        value, problem = _one(f, raw)
        if problem:
            problems.append(Problem(f.name, problem))
        elif value is not None:
            content[f.name] = value
    return content, problems
