"""``caramba doctor`` and ``caramba slack`` against the local Slack API fake: both ways to
connect are recognised (HTTP mode: bot token + signing secret; Socket Mode: bot token +
app token), the bot token is tried with ``auth.test``, and a bot whose token Slack refuses
ends at start-up with one line instead of saying it is up."""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from core.process.doctor_slack import check_slack, check_slack_token, slack_mode
from core.process.doctor_types import Level
from tests.conftest import make_settings
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.processes import Process, worker_env

pytestmark = pytest.mark.integration


def refuse_auth(error: str = "invalid_auth") -> Any:
    return lambda method, _args: error if method == "auth.test" else None


def test_http_mode_and_socket_mode_are_each_recognised() -> None:
    http = slack_mode({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"})
    assert http.level is Level.OK and http.detail.startswith("HTTP mode")
    assert "/slack/events" in http.detail and "disabled" not in http.detail

    socket = slack_mode({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert socket.level is Level.OK and socket.detail.startswith("Socket Mode")

    nothing = slack_mode({})
    assert nothing.level is Level.WARN and "Slack adapter disabled" in nothing.detail
    assert "SLACK_SIGNING_SECRET" in nothing.fix and "SLACK_APP_TOKEN" in nothing.fix

    half = slack_mode({"SLACK_BOT_TOKEN": "xoxb-1"})
    assert half.level is Level.FAIL and "SLACK_SIGNING_SECRET" in half.fix

    no_bot = slack_mode({"SLACK_SIGNING_SECRET": "s"})
    assert no_bot.level is Level.FAIL and "SLACK_BOT_TOKEN" in no_bot.detail

    wrong_app = slack_mode({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"})
    assert wrong_app.level is Level.FAIL and "xapp-" in wrong_app.detail


async def test_the_bot_token_is_tried_with_auth_test(monkeypatch: pytest.MonkeyPatch) -> None:
    slack = await FakeSlackAPI().start()
    try:
        settings = make_settings(slack={"api_url": slack.url})
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
        monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
        monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
        mode, token = await check_slack(settings)
        assert mode.detail.startswith("HTTP mode")
        assert token.level is Level.OK and token.detail == "accepted: the bot is caramba in T1"
        assert slack.calls[-1].method == "auth.test"

        slack.refusing = refuse_auth()
        refused = await check_slack_token(settings, "xoxb-bogus")
        assert refused.level is Level.FAIL
        assert "SLACK_BOT_TOKEN" in refused.detail and "invalid_auth" in refused.detail
        assert "\n" not in refused.detail
        assert [c.method for c in slack.calls] == ["auth.test", "auth.test"]
    finally:
        await slack.stop()
    gone = await check_slack_token(settings, "xoxb-test")  # nothing listens there any more
    assert gone.level is Level.WARN and "could not be reached" in gone.detail


async def test_no_token_means_no_call(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    checks = await check_slack(make_settings(slack={"api_url": "http://127.0.0.1:1/api/"}))
    assert [c.name for c in checks] == ["Slack"]


async def test_caramba_slack_with_a_refused_token_ends_with_one_line() -> None:
    """A real ``caramba slack`` process: Slack answers invalid_auth to auth.test, so the
    process exits 2 with one line naming SLACK_BOT_TOKEN, and never says it is up."""
    slack = await FakeSlackAPI(refusing=refuse_auth()).start()
    env = worker_env(redis__url="", slack__api_url=slack.url)
    env |= {"SLACK_BOT_TOKEN": "xoxb-bogus", "SLACK_SIGNING_SECRET": "secret"}
    env["COLUMNS"] = "250"  # one sentence, not wrapped at 80
    env.pop("SLACK_APP_TOKEN", None)
    args = [sys.executable, "-m", "bots.cli", "slack", "--host", "127.0.0.1", "--port", "0"]
    proc = Process(args, env, "slack-bogus")
    try:
        deadline = time.monotonic() + 60
        while proc.returncode is None and time.monotonic() < deadline:
            await _pause()
        out = proc.output()
        assert proc.returncode == 2, out
    finally:
        if proc.returncode is None:
            proc.proc.kill()
        await slack.stop()
    assert "the Slack bot is up" not in out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    assert "SLACK_BOT_TOKEN" in lines[0] and "invalid_auth" in lines[0]
    assert "Traceback" not in out
    assert [c.method for c in slack.calls] == ["auth.test"]


async def _pause() -> None:
    import asyncio

    await asyncio.sleep(0.1)  # the fake answers on this loop
