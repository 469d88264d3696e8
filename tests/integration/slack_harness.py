"""The Slack tests' shared set-up: the bot served over real Redis and the scripted model,
calling the fake Slack Web API (``tests.fakes.slack_api``) with a library that learns
outside the repository (:func:`slack_harness`), and a button click as Slack sends it
(:func:`click_button`)."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from core.config import Settings
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import CHANNEL, Harness, quick_library, serve_bot
from tests.planning_helpers import settings as planning_settings

FORM = "application/x-www-form-urlencoded"
THREAD_TS = "1700000000.000100"


@contextlib.asynccontextmanager
async def slack_harness(
    make_services: Any,
    redis: Any,
    model: Any,
    *,
    configure: Callable[[Settings], Settings] = lambda s: s,
    users: Mapping[str, str] | None = None,
) -> AsyncIterator[Harness]:
    """The bot over ``model`` and ``redis``, with planning's settings changed by
    ``configure`` (they already point at the fake Slack); ``users``: Slack user id →
    display name the fake knows."""
    slack = await FakeSlackAPI().start()
    for user_id, name in (users or {}).items():
        slack.users[user_id] = {
            "id": user_id,
            "name": name.casefold(),
            "profile": {"display_name": name},
        }
    s = quick_library(planning_settings(), tempfile.mkdtemp(prefix="caramba-lib-"))
    s = configure(s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})}))
    svc = make_services(s, model, redis=redis)
    try:
        async with serve_bot(svc, slack) as h:
            yield h
    finally:
        await slack.stop()
        shutil.rmtree(s.library.index_dir, ignore_errors=True)


async def click_button(
    h: Harness,
    message: dict[str, Any],
    action_id: str,
    user: str,
    ts: str,
    *,
    block_id: str = "b",
    value: str | None = None,
    trigger_id: str = "trig",
) -> httpx.Response:
    """``user`` clicks button ``action_id`` of ``message`` (as posted; its last block
    holds the buttons) shown at ``ts`` in the thread; ``value``: the button's, unless
    given."""
    if value is None:
        buttons = message["blocks"][-1]["elements"]
        value = next(e["value"] for e in buttons if e["action_id"] == action_id)
    payload = {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": user},
        "api_app_id": "A1",
        "trigger_id": trigger_id,
        "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL},
        "channel": {"id": CHANNEL},
        "message": {"ts": ts, "thread_ts": THREAD_TS, "text": message["text"]},
        "actions": [
            {"type": "button", "action_id": action_id, "value": value, "block_id": block_id}
        ],
    }
    response: httpx.Response = await h.post(
        "payload=" + urllib.parse.quote(json.dumps(payload)), FORM
    )
    return response


__all__ = ["FORM", "THREAD_TS", "click_button", "slack_harness"]
