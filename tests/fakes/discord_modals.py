"""A modal's submission as a Discord client makes it: the components shown, with what the
person typed, picked or uploaded (or the defaults shown), refusing what breaks their bounds."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from tests.fakes import discord_limits as limits

Json = dict[str, Any]


def filled(component: Json, values: dict[str, Any], ids: itertools.count[int]) -> Json:
    """A modal component as its submit carries it: the structure shown, with the values
    typed (or the defaults); a Discord client refuses to submit what breaks the bounds."""
    kind, custom_id = component["type"], str(component.get("custom_id"))
    out: Json = {"type": kind, "id": component.get("id") or next(ids)}
    if kind == limits.ACTION_ROW:
        out["components"] = [filled(c, values, ids) for c in component["components"]]
    elif kind == limits.LABEL:
        out["component"] = filled(component["component"], values, ids)
    elif kind == limits.TEXT_INPUT:
        value = str(values.get(custom_id, component.get("value") or ""))
        if component.get("required", True) and not value:
            raise ValueError(f"input {custom_id!r} is required")
        if not component.get("min_length", 0) <= len(value) <= component.get("max_length", 4000):
            raise ValueError(f"input {custom_id!r}: {len(value)} characters is out of bounds")
        out |= {"custom_id": custom_id, "value": value}
    elif kind in limits.SELECTS:
        out |= {"custom_id": custom_id, "values": _picked(component, values.get(custom_id))}
    elif kind == limits.FILE_UPLOAD:
        ids_ = list(values.get(custom_id, []))
        if component.get("required", True) and not ids_:
            raise ValueError(f"file upload {custom_id!r} is required")
        if not component.get("min_values", 1) <= len(ids_) <= component.get("max_values", 1):
            raise ValueError(f"{len(ids_)} files is outside the bounds of {custom_id!r}")
        out |= {"custom_id": custom_id, "values": ids_}
    elif kind == limits.CHECKBOX:
        out |= {
            "custom_id": custom_id,
            "value": bool(values.get(custom_id, component.get("default"))),
        }
    return out


def _picked(select: Json, values: Sequence[str] | None) -> list[str]:
    """A select's values as submitted: those picked, else the ones shown selected; a
    Discord client offers only the options and keeps to min_values/max_values."""
    options = select.get("options") or []
    if values is None:
        return [o["value"] for o in options if o.get("default")]
    custom_id = select.get("custom_id")
    if select["type"] == limits.STRING_SELECT:
        allowed = {o["value"] for o in options}
        if not set(values) <= allowed:
            raise ValueError(f"{values} are not all options of {custom_id!r}: {sorted(allowed)}")
    low = select.get("min_values", 0 if select.get("required") is False else 1)
    if not low <= len(values) <= select.get("max_values", 1):
        raise ValueError(f"{len(values)} values is outside min_values/max_values of {custom_id!r}")
    return list(values)
