"""Discord's documented limits on what a bot sends, checked as Discord checks them: a
message or modal over a limit is refused with HTTP 400 ``{"code": 50035, "errors": {...},
"message": "Invalid Form Body"}`` (discord.py raises ``HTTPException`` with ``code`` 50035
and the paths in its text), an empty message with code 50006, a too large file with 413.

Components V2 (message flag 1 << 15): no content and no embeds beside them, at most 40
components in all (nested ones counted: a container's children, a section's texts and its
accessory, a row's buttons), at most 4,000 characters of text in all, a section with 1-3
texts and a button or thumbnail beside them, no container in a container; without the flag,
only action rows at the top.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]
FILE_SIZE_LIMIT = 10 * 1024 * 1024  # a guild without boosts
MAX_FILES = 10
COMPONENTS_V2 = 1 << 15
BUTTON, STRING_SELECT, TEXT_INPUT, ACTION_ROW, LABEL = 2, 3, 4, 1, 18
CHECKBOX = 23  # in a modal, inside a label
SELECTS = {3, 5, 6, 7, 8}
LINK_STYLE = 5
SECTION, TEXT_DISPLAY, THUMBNAIL, MEDIA_GALLERY, FILE, SEPARATOR, CONTAINER = (
    9,
    10,
    11,
    12,
    13,
    14,
    17,
)
FILE_UPLOAD = 19
V2_TOP = {ACTION_ROW, SECTION, TEXT_DISPLAY, MEDIA_GALLERY, FILE, SEPARATOR, CONTAINER}
V2_COMPONENTS_LIMIT = 40
V2_TEXT_LIMIT = 4000


class Problems:
    """Errors gathered under their field paths, in Discord's nested ``errors`` shape."""

    def __init__(self) -> None:
        self.errors: Json = {}

    def add(self, path: list[str | int], code: str, message: str) -> None:
        node = self.errors
        for part in path:
            node = node.setdefault(str(part), {})
        node.setdefault("_errors", []).append({"code": code, "message": message})

    def too_long(self, path: list[str | int], value: Any, limit: int) -> None:
        if isinstance(value, str | list) and len(value) > limit:
            self.add(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")

    def body(self) -> Json | None:
        if not self.errors:
            return None
        return {"code": 50035, "errors": self.errors, "message": "Invalid Form Body"}


def _embed_chars(embed: Json) -> int:
    fields = embed.get("fields") or []
    parts = [
        embed.get("title"),
        embed.get("description"),
        (embed.get("footer") or {}).get("text"),
        (embed.get("author") or {}).get("name"),
        *[f.get("name") for f in fields],
        *[f.get("value") for f in fields],
    ]
    return sum(len(p) for p in parts if isinstance(p, str))


def _check_embeds(p: Problems, embeds: list[Json]) -> None:
    p.too_long(["embeds"], embeds, 10)
    for i, embed in enumerate(embeds):
        at: list[str | int] = ["embeds", i]
        p.too_long([*at, "title"], embed.get("title"), 256)
        p.too_long([*at, "description"], embed.get("description"), 4096)
        p.too_long([*at, "footer", "text"], (embed.get("footer") or {}).get("text"), 2048)
        p.too_long([*at, "author", "name"], (embed.get("author") or {}).get("name"), 256)
        fields = embed.get("fields") or []
        p.too_long([*at, "fields"], fields, 25)
        for j, field in enumerate(fields):
            for key, limit in (("name", 256), ("value", 1024)):
                if not field.get(key):
                    p.add([*at, "fields", j, key], "BASE_TYPE_REQUIRED", "This field is required")
                p.too_long([*at, "fields", j, key], field.get(key), limit)
    if sum(_embed_chars(e) for e in embeds) > 6000:
        p.add(["embeds"], "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000")


def _check_item(p: Problems, at: list[str | int], item: Json, seen: set[str]) -> None:
    kind = item.get("type")
    custom_id = item.get("custom_id")
    if isinstance(custom_id, str):
        p.too_long([*at, "custom_id"], custom_id, 100)
        if custom_id in seen:
            p.add(
                [*at, "custom_id"],
                "COMPONENT_CUSTOM_ID_DUPLICATED",
                "Component custom id cannot be duplicated",
            )
        seen.add(custom_id)
    if kind == BUTTON:
        p.too_long([*at, "label"], item.get("label"), 80)
        if item.get("style") == LINK_STYLE:
            if not item.get("url") or custom_id:
                p.add(
                    [*at, "url"],
                    "BUTTON_COMPONENT_INVALID_URL",
                    "A link button needs a url and no custom_id",
                )
        elif not custom_id and item.get("style") != 6:
            p.add([*at, "custom_id"], "BASE_TYPE_REQUIRED", "This field is required")
    elif kind in SELECTS:
        p.too_long([*at, "placeholder"], item.get("placeholder"), 150)
        if not custom_id:
            p.add([*at, "custom_id"], "BASE_TYPE_REQUIRED", "This field is required")
        if kind == STRING_SELECT:
            options = item.get("options") or []
            if not options:
                p.add([*at, "options"], "BASE_TYPE_MIN_LENGTH", "Must be 1 or more in length.")
            p.too_long([*at, "options"], options, 25)
            for k, option in enumerate(options):
                for key in ("label", "value", "description"):
                    p.too_long([*at, "options", k, key], option.get(key), 100)
    elif kind == TEXT_INPUT:
        p.too_long([*at, "label"], item.get("label"), 45)
        p.too_long([*at, "value"], item.get("value"), 4000)
        p.too_long([*at, "placeholder"], item.get("placeholder"), 100)
        if not 1 <= int(item.get("max_length") or 4000) <= 4000:
            p.add([*at, "max_length"], "NUMBER_TYPE_MAX", "int value should be <= 4000.")


def _check_rows(p: Problems, components: list[Json], *, in_modal: bool) -> None:
    seen: set[str] = set()
    p.too_long(["components"], components, 5)
    for i, top in enumerate(components):
        at: list[str | int] = ["components", i]
        if top.get("type") == LABEL and in_modal:
            p.too_long([*at, "label"], top.get("label"), 45)
            _check_item(p, [*at, "component"], top.get("component") or {}, seen)
            continue
        if top.get("type") != ACTION_ROW:
            if not in_modal:
                p.add(
                    [*at, "type"], "UNION_TYPE_CHOICES", "Top-level components must be action rows"
                )
            continue
        children = top.get("components") or []
        widest = 1 if in_modal or any(c.get("type") in SELECTS for c in children) else 5
        if not children:
            p.add([*at, "components"], "BASE_TYPE_MIN_LENGTH", "Must be 1 or more in length.")
        p.too_long([*at, "components"], children, widest)
        for j, child in enumerate(children):
            if (child.get("type") == TEXT_INPUT) != in_modal:
                p.add(
                    [*at, "components", j, "type"],
                    "COMPONENT_TYPE_INVALID",
                    "Invalid component type here",
                )
            _check_item(p, [*at, "components", j], child, seen)


def v2_components(components: list[Json]) -> list[Json]:
    """Every component of a V2 message, nested ones included (as Discord counts them)."""
    found: list[Json] = []
    for component in components:
        found.append(component)
        found.extend(v2_components(component.get("components") or []))
        if isinstance(component.get("accessory"), dict):
            found.append(component["accessory"])
    return found


def _check_v2_item(p: Problems, at: list[str | int], item: Json, seen: set[str]) -> None:
    kind = item.get("type")
    children = item.get("components") or []
    if kind == SECTION:
        if not 1 <= len(children) <= 3 or any(c.get("type") != TEXT_DISPLAY for c in children):
            p.add([*at, "components"], "BASE_TYPE_BAD_LENGTH", "A section holds 1 to 3 texts.")
        accessory = item.get("accessory") or {}
        if accessory.get("type") not in (BUTTON, THUMBNAIL):
            p.add(
                [*at, "accessory"], "BASE_TYPE_REQUIRED", "A section needs a button or thumbnail."
            )
        elif accessory.get("type") == BUTTON:
            _check_item(p, [*at, "accessory"], accessory, seen)
    elif kind == CONTAINER:
        for i, child in enumerate(children):
            if child.get("type") not in V2_TOP - {CONTAINER}:
                p.add(
                    [*at, "components", i, "type"], "COMPONENT_TYPE_INVALID", "Not in a container"
                )
            _check_v2_item(p, [*at, "components", i], child, seen)
    elif kind == ACTION_ROW:
        if not children:
            p.add([*at, "components"], "BASE_TYPE_MIN_LENGTH", "Must be 1 or more in length.")
        widest = 1 if any(c.get("type") in SELECTS for c in children) else 5
        p.too_long([*at, "components"], children, widest)
        for j, child in enumerate(children):
            _check_item(p, [*at, "components", j], child, seen)
    elif kind == TEXT_DISPLAY and not item.get("content"):
        p.add([*at, "content"], "BASE_TYPE_REQUIRED", "This field is required")


def _check_v2(p: Problems, body: Json) -> None:
    """A Components V2 message: no content or embeds, ≤ 40 components, ≤ 4,000 characters."""
    if body.get("content"):
        p.add(["content"], "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2", "No content")
    if body.get("embeds"):
        p.add(["embeds"], "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2", "No embeds")
    components = body.get("components") or []
    seen: set[str] = set()
    for i, top in enumerate(components):
        if top.get("type") not in V2_TOP:
            p.add(["components", i, "type"], "COMPONENT_TYPE_INVALID", "Not a top-level component")
        _check_v2_item(p, ["components", i], top, seen)
    every = v2_components(components)
    if len(every) > V2_COMPONENTS_LIMIT:
        p.add(["components"], "MAX_COMPONENTS", f"Must be {V2_COMPONENTS_LIMIT} or fewer in all.")
    text = sum(len(c.get("content") or "") for c in every if c.get("type") == TEXT_DISPLAY)
    if text > V2_TEXT_LIMIT:
        p.add(["components"], "MAX_TEXT_LENGTH", f"{text} characters of text; at most 4000.")


def check_message(body: Json, files: int, *, creating: bool) -> Json | None:
    """The 400 body Discord would answer for this message payload, or None if valid."""
    p = Problems()
    p.too_long(["content"], body.get("content"), 2000)
    _check_embeds(p, body.get("embeds") or [])
    components = body.get("components") or []
    if int(body.get("flags") or 0) & COMPONENTS_V2:
        _check_v2(p, body)
    else:
        _check_rows(p, components, in_modal=False)
    if files > MAX_FILES:
        p.add(["files"], "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_FILES} or fewer in length.")
    problems = p.body()
    if problems is None and creating:
        keys = ("content", "embeds", "components", "sticker_ids", "poll", "attachments")
        if not files and not any(body.get(k) for k in keys):
            return {"code": 50006, "message": "Cannot send an empty message"}
    return problems


def check_modal(data: Json) -> Json | None:
    """The 400 body for a modal (interaction callback type 9), or None if valid."""
    p = Problems()
    if not 1 <= len(data.get("title") or "") <= 45:
        p.add(["data", "title"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length.")
    if not 1 <= len(data.get("custom_id") or "") <= 100:
        p.add(["data", "custom_id"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
    components = data.get("components") or []
    if not components:
        p.add(["data", "components"], "BASE_TYPE_MIN_LENGTH", "Must be 1 or more in length.")
    _check_rows(p, components, in_modal=True)
    return p.body()


def too_large(sizes: list[int]) -> Json | None:
    """The 413 body Discord answers when a file is over the guild's upload limit."""
    if any(size > FILE_SIZE_LIMIT for size in sizes):
        return {"code": 40005, "message": "Request entity too large"}
    return None
