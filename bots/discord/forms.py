"""A form an MCP server asks for, in Discord: the message with persistent buttons
(``caramba:form:<fill|accept|decline>:<run>:<form>``: Fill in, or Done / Confirm, and
Decline; a link button for URL mode), and the modal built from the form's fields with
discord.py 2.7 (a text input for text and numbers, ``Label``-wrapped selects for a
choice or several, a checkbox for yes/no; Discord holds five per modal). Clicks →
``core.runs.people.open_form`` / ``answer_form`` (the rule is the people room's); a
refusal or the problems only the clicker sees; once answered, the message is redrawn
through the outbox to say who did, without its buttons."""

from __future__ import annotations

import logging
import re
from typing import Any, cast

import discord

from bots.chat.forms import (
    CONFIRM_LABEL,
    DECLINE_LABEL,
    DONE_LABEL,
    FILL_LABEL,
    asks,
    how,
    safe_link,
)
from bots.chat.intentions import Form
from bots.chat.ports import Rendered
from bots.discord.claims import Claimed
from bots.discord.text import MESSAGE_LIMIT, escape, truncate
from bots.discord.views import RUN
from core.types.forms import FormField, Typed

log = logging.getLogger(__name__)
FORM = r"(?P<form>form_[0-9a-z]{1,40})"
MAX_INPUTS = 5  # Discord's limit per modal
_LABEL = 45


def form_message(f: Form) -> Rendered:
    """The form's words; the transport adds its buttons (``buttons`` form)."""
    text = f"{escape(asks(f))}\n{escape(how(f))}"
    if f.url and not safe_link(f.url):
        text += f"\n`{escape(f.url)}`"
    mode = "accept" if f.url or not f.fields else "fill"
    label = DONE_LABEL if f.url else (FILL_LABEL if f.fields else CONFIRM_LABEL)
    payload = {"buttons": "form", "run": f.run_id, "form": f.form_id, "mode": mode}
    payload |= {"label": label, "open": safe_link(f.url) or ""}
    return Rendered(truncate(text, MESSAGE_LIMIT), payload)


class FormButton(
    Claimed,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"^caramba:form:(?P<act>fill|accept|decline):{RUN}:{FORM}$",
):
    def __init__(self, act: str, run_id: str, form_id: str, label: str = "") -> None:
        style = discord.ButtonStyle.secondary if act == "decline" else discord.ButtonStyle.primary
        button: discord.ui.Button[Any] = discord.ui.Button(
            label=(label or {"fill": FILL_LABEL, "accept": DONE_LABEL}.get(act, DECLINE_LABEL))[
                :80
            ],
            style=style,
            custom_id=f"caramba:form:{act}:{run_id}:{form_id}",
        )
        super().__init__(button)
        self.act, self.run_id, self.form_id = act, run_id, form_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> FormButton:
        return cls(match["act"], match["run"], match["form"])

    async def callback(self, interaction: discord.Interaction) -> None:
        clicks = cast(Any, getattr(interaction.client, "forms"))  # noqa: B009
        await clicks.clicked(interaction, self.act, self.run_id, self.form_id)


FORM_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (FormButton,)


def form_view(payload: dict[str, Any]) -> discord.ui.View:
    """The form's buttons (the renderer's payload)."""
    run_id, form_id = str(payload.get("run", "")), str(payload.get("form", ""))
    view = discord.ui.View(timeout=None)
    mode = str(payload.get("mode", "fill"))
    view.add_item(FormButton(mode, run_id, form_id, str(payload.get("label", ""))))
    view.add_item(FormButton("decline", run_id, form_id))
    if payload.get("open"):
        view.add_item(discord.ui.Button(label="Open the link", url=str(payload["open"])))
    return view


def _select(field: FormField, many: bool) -> discord.ui.Select[Any]:
    options = [
        discord.SelectOption(
            label=o.label[:100] or o.value[:100],
            value=o.value[:100],
            default=o.value == field.default
            or (isinstance(field.default, list) and o.value in field.default),
        )
        for o in field.options[:25]
    ]
    return discord.ui.Select(
        custom_id=f"f:{field.name}"[:100],
        options=options,
        min_values=0 if many or not field.required else 1,
        max_values=len(options) if many else 1,
        required=field.required,
    )


class FormModal(discord.ui.Modal):
    """The form ``form_id`` of run ``run_id`` from ``server``: one input per field."""

    def __init__(
        self, run_id: str, form_id: str, server: str, fields: tuple[FormField, ...]
    ) -> None:
        super().__init__(
            title=truncate(server or "Form", _LABEL),
            custom_id=f"caramba:fm:{form_id}"[:100],
            timeout=900,
        )
        self.run_id, self.form_id, self.fields = run_id, form_id, fields[:MAX_INPUTS]
        self.inputs: dict[str, Any] = {}
        for field in self.fields:
            label, about = truncate(field.label, _LABEL), field.description[:100] or None
            item: Any
            if field.kind in ("choice", "choices"):
                item = _select(field, field.kind == "choices")
                self.add_item(discord.ui.Label(text=label, component=item, description=about))
            elif field.kind == "boolean":
                item = discord.ui.Checkbox(
                    custom_id=f"f:{field.name}"[:100], default=field.default is True
                )
                self.add_item(discord.ui.Label(text=label, component=item, description=about))
            else:
                default = field.default
                item = discord.ui.TextInput(
                    label=label,
                    custom_id=f"f:{field.name}"[:100],
                    default=None if default is None else str(default)[:4000],
                    required=field.required,
                    placeholder=about,
                    min_length=field.min_length,
                    max_length=min(field.max_length or 4000, 4000),
                )
                self.add_item(item)
            self.inputs[field.name] = item

    def typed(self) -> dict[str, Typed]:
        """What was typed, per field."""
        out: dict[str, Typed] = {}
        for field in self.fields:
            item = self.inputs[field.name]
            if isinstance(item, discord.ui.Select):
                out[field.name] = (
                    list(item.values)
                    if field.kind == "choices"
                    else (item.values[0] if item.values else None)
                )
            elif isinstance(item, discord.ui.Checkbox):
                out[field.name] = bool(item.value)
            else:
                out[field.name] = item.value
        return out

    async def on_submit(self, interaction: discord.Interaction) -> None:
        clicks = cast(Any, getattr(interaction.client, "forms"))  # noqa: B009
        await clicks.submitted(interaction, self)
