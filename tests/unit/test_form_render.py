"""A form an MCP server asks for, as each adapter draws it (no platform): the buttons by
mode, a URL made clickable only when it is a web link (escaped for Slack's markup), and
the modal/HTML inputs a schema becomes."""

from __future__ import annotations

from typing import Any

from bots.chat.intentions import Form
from bots.discord.forms import form_message as discord_message
from bots.slack.forms import form_message as slack_message
from bots.slack.forms import form_view, typed_of
from bots.web.form_render import form_message as web_message
from core.types.forms import fields_of

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 12, "default": 2},
        "s": {"type": "string", "enum": ["a", "b"], "enumNames": ["Apple", "Banana"]},
        "t": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
        "v": {"type": "boolean", "default": True},
        "d": {"type": "string", "format": "date", "description": "When"},
    },
    "required": ["n"],
}


def as_dict(payload: object) -> dict[str, Any]:
    assert isinstance(payload, dict)
    return payload


def form(**kw: object) -> Form:
    base: dict[str, object] = {"run_id": "run_1", "form_id": "form_1", "agent": "Ana",
                               "server": "shop", "message": "Book <it> @channel"}  # fmt: skip
    return Form(**{**base, **kw})  # type: ignore[arg-type]


def test_slack_buttons_by_mode_and_links_escaped() -> None:
    filled = slack_message(form(fields=fields_of(SCHEMA)))
    assert "Book &lt;it&gt; @\u2060channel" in filled.text
    buttons = filled.payload[-1]["elements"]  # type: ignore[index]
    assert [(b["text"]["text"], b["action_id"]) for b in buttons] == [
        ("Fill in", "caramba_form_fill"), ("Decline", "caramba_form_decline"),
    ]  # fmt: skip
    assert buttons[0]["value"] == "run_1|form_1"
    link = slack_message(form(url="https://x.test/a?b=1&c=<2>"))
    assert "`https://x.test/a?b=1&amp;c=&lt;2&gt;`" in link.text  # <> in it: shown, not linked
    ok = slack_message(form(url="https://x.test/a?b=1&c=2"))
    assert "<https://x.test/a?b=1&amp;c=2|https://x.test/a?b=1&amp;c=2>" in ok.text
    assert ok.payload[-1]["elements"][0]["text"]["text"] == "Done"  # type: ignore[index]
    js = slack_message(form(url="javascript:alert(1)"))
    assert "`javascript:alert(1)`" in js.text and "<javascript" not in js.text
    confirm = slack_message(form())
    assert confirm.payload[-1]["elements"][0]["text"]["text"] == "Confirm"  # type: ignore[index]


def test_the_slack_modal_from_the_schema_and_back() -> None:
    view = form_view(fields_of(SCHEMA), "Book it", "a very long server name indeed", {}).to_dict()
    assert view["title"]["text"] == "a very long server name "[:24]
    inputs = {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}
    n = inputs["f:n"]
    assert n["element"]["type"] == "number_input" and n["element"]["initial_value"] == "2"
    assert n["element"]["min_value"] == "1" and not n.get("optional")
    assert [o["text"]["text"] for o in inputs["f:s"]["element"]["options"]] == ["Apple", "Banana"]
    assert inputs["f:t"]["element"]["type"] == "multi_static_select"
    assert inputs["f:v"]["element"]["initial_options"][0]["value"] == "true"
    assert (
        inputs["f:d"]["element"]["type"] == "datepicker" and inputs["f:d"]["hint"]["text"] == "When"
    )
    state = {
        "f:n": {"v": {"type": "number_input", "value": "3"}},
        "f:s": {"v": {"selected_option": {"value": "b"}}},
        "f:t": {"v": {"selected_options": [{"value": "x"}, {"value": "y"}]}},
        "f:v": {"v": {"selected_options": []}},
        "f:d": {"v": {"selected_date": "2026-11-27"}},
    }
    assert typed_of(fields_of(SCHEMA), state) == {
        "n": "3", "s": "b", "t": ["x", "y"], "v": False, "d": "2026-11-27",
    }  # fmt: skip


def test_discord_and_web_payloads() -> None:
    d = discord_message(form(url="https://x.test/sign"))
    assert d.payload == {"buttons": "form", "run": "run_1", "form": "form_1", "mode": "accept",
                         "label": "Done", "open": "https://x.test/sign"}  # fmt: skip
    assert as_dict(discord_message(form(url="file:///etc/passwd")).payload)["open"] == ""
    w = as_dict(web_message(form(fields=fields_of(SCHEMA))).payload)
    assert w["kind"] == "form" and [f["name"] for f in w["fields"]] == [
        "n", "s", "t", "v", "d",
    ]  # fmt: skip
    assert as_dict(web_message(form(url="javascript:x")).payload)["link"] == ""
