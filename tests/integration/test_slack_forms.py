"""A form an MCP server asks for, from Slack (signed requests into the app, the fake
Slack Web API, real Redis, the scripted model, the tests' own MCP server over stdio):
the thread gets the form with Fill in / Decline and the status line says the run waits
for it; an outsider's Fill in is refused in private; the requester's opens a modal built
from the schema; a submission the form refuses shows the problem under its field; a good
one goes to the server, the form says who sent it, and the run ends with the booking."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from core.tools import elicit as elicit_module
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.forms_run import BOOKED, GOOD, TASK, TOO_MANY, booker, shop_tools, with_shop
from tests.integration.test_slack_http import (
    ANA,
    CHANNEL,
    MALLORY,
    Harness,
    quick_library,
    serve_bot,
)
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
_FORM = "application/x-www-form-urlencoded"
FORM_TS = "1700000000.000777"


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit_module, "POLL_S", 0.05)


@contextlib.asynccontextmanager
async def harness(make_services: Any, redis: Any) -> AsyncIterator[Harness]:
    slack = await FakeSlackAPI().start()
    s = quick_library(planning_settings(), tempfile.mkdtemp(prefix="caramba-lib-"))
    s = with_shop(s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})}))
    svc = make_services(s, booker(), redis=redis)
    try:
        async with shop_tools(svc), serve_bot(svc, slack) as h:
            yield h
    finally:
        await slack.stop()
        shutil.rmtree(s.library.index_dir, ignore_errors=True)


def forms(h: Harness) -> list[dict[str, Any]]:
    return [c for c in h.slack.of("chat.postMessage") if "caramba_form_fill" in json.dumps(c)]


async def click(h: Harness, form: dict[str, Any], action_id: str, user: str) -> httpx.Response:
    """A click on the form message's button ``action_id``, as Slack sends it."""
    value = form["blocks"][-1]["elements"][0]["value"]
    payload = {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": user},
        "api_app_id": "A1",
        "trigger_id": "trig-form",
        "container": {"type": "message", "message_ts": FORM_TS, "channel_id": CHANNEL},
        "channel": {"id": CHANNEL},
        "message": {"ts": FORM_TS, "thread_ts": "1700000000.000100", "text": form["text"]},
        "actions": [{"type": "button", "action_id": action_id, "value": value, "block_id": "f"}],
    }
    return await h.post("payload=" + urllib.parse.quote(json.dumps(payload)), _FORM)


def values(view: dict[str, Any], typed: dict[str, Any]) -> dict[str, Any]:
    """The modal's state as Slack sends it, for ``typed`` (field name → what was typed)."""
    state: dict[str, Any] = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        name, element = block["block_id"].removeprefix("f:"), block["element"]
        got = typed.get(name)
        match element["type"]:
            case "static_select":
                options = [o for o in element["options"] if o["value"] == got]
                v: dict[str, Any] = {"selected_option": options[0] if options else None}
            case "checkboxes":
                v = {"selected_options": element["options"] if got else []}
            case _:
                v = {"value": got}
        state[block["block_id"]] = {"v": {"type": element["type"], **v}}
    return state


async def submit(h: Harness, view: dict[str, Any], typed: dict[str, Any]) -> httpx.Response:
    payload = {
        "type": "view_submission",
        "team": {"id": "T1"},
        "user": {"id": ANA},
        "api_app_id": "A1",
        "trigger_id": "trig",
        "view": {**view, "id": "V1", "state": {"values": values(view, typed)}},
    }
    return await h.post("payload=" + urllib.parse.quote(json.dumps(payload)), _FORM)


async def test_the_requester_fills_in_the_servers_form(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        await h.mention(TASK)
        await h.slack.wait_for(lambda: bool(forms(h)), timeout_s=20)
        (form,) = forms(h)
        assert form["thread_ts"] == "1700000000.000100"
        assert "shop asks" in form["text"] and "Who is the table for?" in form["text"]
        labels = [e["text"]["text"] for e in form["blocks"][-1]["elements"]]
        assert labels == ["Fill in", "Decline"]

        def waiting() -> bool:
            shown = [*h.slack.of("chat.postMessage"), *h.slack.of("chat.update")]
            return any("waits for a person to answer a form" in c["text"] for c in shown)

        await h.slack.wait_for(waiting)

        await click(h, form, "caramba_form_fill", MALLORY)
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postEphemeral")))
        (refusal,) = h.slack.of("chat.postEphemeral")
        assert refusal["user"] == MALLORY and refusal["text"].startswith("Only <@UANA>, who asked")
        assert not h.slack.of("views.open")

        await click(h, form, "caramba_form_fill", ANA)
        await h.slack.wait_for(lambda: bool(h.slack.of("views.open")))
        opened = h.slack.of("views.open")[0]
        assert opened["trigger_id"] == "trig-form"
        view = opened["view"] if isinstance(opened["view"], dict) else json.loads(opened["view"])
        kinds = {
            b["block_id"]: b["element"]["type"] for b in view["blocks"] if b["type"] == "input"
        }
        assert kinds == {
            "f:name": "plain_text_input", "f:guests": "number_input", "f:seating": "static_select",
            "f:vegan": "checkboxes", "f:email": "email_text_input",
        }  # fmt: skip

        bad = await submit(h, view, TOO_MANY)
        assert bad.json() == {
            "response_action": "errors", "errors": {"f:guests": "Guests must be at most 12."},
        }  # fmt: skip
        ok = await submit(h, view, GOOD)
        assert ok.status_code == 200 and not ok.content
        await h.runs_end()
        texts = [c["text"] for c in h.slack.of("chat.postMessage")]
        assert any(BOOKED in t for t in texts)
        answered = next(u for u in h.slack.of("chat.update") if u["ts"] == FORM_TS)
        assert "Sent by <@UANA> to shop." in answered["text"]
        assert "caramba_form_fill" not in json.dumps(answered["blocks"]), "no buttons left"


async def test_decline_tells_the_server(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        await h.mention(TASK)
        await h.slack.wait_for(lambda: bool(forms(h)), timeout_s=20)
        (form,) = forms(h)
        await click(h, form, "caramba_form_decline", ANA)
        await h.runs_end()
        texts = [c["text"] for c in h.slack.of("chat.postMessage")]
        assert any("Not booked (decline)." in t for t in texts)
        answered = next(u for u in h.slack.of("chat.update") if u["ts"] == FORM_TS)
        assert "Declined by <@UANA> for shop." in answered["text"]
