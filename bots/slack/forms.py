"""A form an MCP server asks for, in Slack: the message (Fill in / Decline; a link with
Done / Decline; Confirm / Decline when there is nothing to fill in), the modal built
from the form's fields with Block Kit (text, email, link and date inputs, a number
input, a select for a choice, a multi-select for several, a checkbox for yes/no), and
the clicks → ``core.runs.people.open_form`` / ``answer_form`` (the rule — who may answer —
is the people room's). Problems come back under their field in the modal; a refusal
only the clicker sees. Once answered, the message is redrawn through the run's outbox to
say who did what, without its buttons."""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    CheckboxesElement,
    DatePickerElement,
    EmailInputElement,
    InputBlock,
    InputInteractiveElement,
    MarkdownTextObject,
    NumberInputElement,
    Option,
    PlainTextInputElement,
    SectionBlock,
    StaticMultiSelectElement,
    StaticSelectElement,
    UrlInputElement,
)
from slack_sdk.models.views import View

from bots.chat.forms import (
    CONFIRM_LABEL,
    DECLINE_LABEL,
    DONE_LABEL,
    FILL_LABEL,
    SUBMIT_LABEL,
    asks,
    how,
    safe_link,
)
from bots.chat.intentions import Form
from bots.chat.ports import Rendered
from bots.slack.names import content, named_now
from bots.slack.text import escape, truncate
from core.types.forms import FormField, Typed

FILL = "caramba_form_fill"
ACCEPT = "caramba_form_accept"
DECLINE = "caramba_form_decline"
FORM_VIEW = "caramba_form"
# A modal holds 100 blocks: the message, then at most 99 inputs.
_MAX_INPUTS = 99
_MAX_OPTIONS = 100


def form_message(f: Form) -> Rendered:
    """The form's message in the thread."""
    link = safe_link(f.url)
    text = f"{content(asks(f))}\n{content(how(f))}"
    if f.url:
        shown = f"<{link.replace('&', '&amp;')}|{escape(link)}>" if link else ""
        text += f"\n{shown}" if shown else f"\n`{escape(f.url)}`"
    value = f"{f.run_id}|{f.form_id}"
    first = (
        ButtonElement(text=FILL_LABEL, action_id=FILL, value=value, style="primary")
        if f.fields and not f.url
        else ButtonElement(
            text=DONE_LABEL if f.url else CONFIRM_LABEL,
            action_id=ACCEPT,
            value=value,
            style="primary",
        )
    )
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=truncate(text))),
        ActionsBlock(
            block_id=f"form:{f.form_id}",
            elements=[first, ButtonElement(text=DECLINE_LABEL, action_id=DECLINE, value=value)],
        ),
    ]
    return Rendered(truncate(text), [b.to_dict() for b in blocks])


def _options(field: FormField) -> list[Option]:
    return [Option(text=o.label[:75], value=o.value[:150]) for o in field.options[:_MAX_OPTIONS]]


def _element(field: FormField) -> InputInteractiveElement:
    """The input for ``field``, its default filled in."""
    default = field.default
    text = str(default) if isinstance(default, str | int | float) and default != "" else None
    match field.kind:
        case "number" | "integer":
            return NumberInputElement(
                action_id="v",
                is_decimal_allowed=field.kind == "number",
                initial_value=text,
                min_value=None if field.minimum is None else f"{field.minimum:g}",
                max_value=None if field.maximum is None else f"{field.maximum:g}",
            )
        case "boolean":
            yes = Option(text=field.label[:75], value="true")
            return CheckboxesElement(
                action_id="v", options=[yes], initial_options=[yes] if default is True else None
            )
        case "choice":
            options = _options(field)
            chosen = next((o for o in options if o.value == default), None)
            return StaticSelectElement(action_id="v", options=options, initial_option=chosen)
        case "choices":
            options = _options(field)
            picked = [o for o in options if isinstance(default, list) and o.value in default]
            return StaticMultiSelectElement(
                action_id="v", options=options, initial_options=picked or None
            )
    if field.format == "email":
        return EmailInputElement(action_id="v", initial_value=text)
    if field.format == "uri":
        return UrlInputElement(action_id="v", initial_value=text)
    if field.format == "date":
        return DatePickerElement(action_id="v", initial_date=text)
    return PlainTextInputElement(
        action_id="v",
        initial_value=text,
        min_length=field.min_length,
        max_length=min(field.max_length or 3000, 3000),
    )


def form_view(
    fields: tuple[FormField, ...], message: str, server: str, meta: dict[str, str]
) -> View:
    """The modal: the server's message, then one input per field."""
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=truncate(named_now(message, {}))))
    ]
    for field in fields[:_MAX_INPUTS]:
        blocks.append(
            InputBlock(
                block_id=f"f:{field.name}"[:255],
                label=field.label[:2000],
                element=_element(field),
                hint=field.description[:2000] or None,
                optional=not field.required,
            )
        )
    return View(
        type="modal",
        callback_id=FORM_VIEW,
        title=server[:24] or "Form",
        submit=SUBMIT_LABEL,
        close="Cancel",
        blocks=blocks,
        private_metadata=json.dumps(meta),
    )


def typed_of(fields: tuple[FormField, ...], values: dict[str, Any]) -> dict[str, Typed]:
    """What was typed in the modal, per field (``view.state.values``)."""
    typed: dict[str, Typed] = {}
    for field in fields:
        v = (values.get(f"f:{field.name}"[:255]) or {}).get("v") or {}
        if "selected_options" in v:
            picked = [o["value"] for o in v.get("selected_options") or []]
            typed[field.name] = bool(picked) if field.kind == "boolean" else picked
        elif "selected_option" in v:
            typed[field.name] = (v.get("selected_option") or {}).get("value")
        elif "selected_date" in v:
            typed[field.name] = v.get("selected_date")
        else:
            typed[field.name] = v.get("value")
    return typed
