"""A post or edit Slack refuses is shown another way, never silently dropped: against the
HTTP fake of the Web API refusing once (``channel_not_found``, ``message_not_found``), for
good (``invalid_blocks``: text only), or in a thread that is gone (in the channel); real
Redis holds the outbox and the drops."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat import courier as courier_module
from bots.chat.courier import Courier
from bots.chat.outbox import Entry, Outbox
from bots.chat.ports import Place, Rendered
from bots.chat.store import ChatStore
from bots.slack.adapter import slack_adapter
from core.config import Settings
from core.llm.scripted import ScriptedModel
from tests.fakes.slack_api import FakeSlackAPI

pytestmark = pytest.mark.integration
CHANNEL, THREAD = "C0FALLBACK", "1700000000.000100"
RUN = "run_fallbacks"


def _section(text: str) -> list[dict[str, Any]]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{text}*"}}]


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(courier_module, "FIRST_RETRY_S", 0.01)


class Run:
    """One run's outbox delivered into the fake Slack by its courier."""

    def __init__(self, svc: Any, client: AsyncWebClient) -> None:
        adapter = slack_adapter(svc, client)
        self.store = ChatStore.of(svc, "slack")
        self.outbox = Outbox(self.store)
        self.courier = Courier(self.outbox, adapter, RUN, Place(CHANNEL, THREAD))

    async def deliver(self, entries: Sequence[Entry] = (), status: str | None = None) -> None:
        shown = None if status is None else Rendered(status, _section(status))
        await self.outbox.add(RUN, entries, shown)
        done = asyncio.Event()
        done.set()
        await asyncio.wait_for(self.courier.run(done), 10)


@contextlib.asynccontextmanager
async def slack_run(make_services: Any, redis: Any) -> AsyncIterator[tuple[Run, FakeSlackAPI]]:
    slack = await FakeSlackAPI().start()
    s = Settings()
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    svc = make_services(s, ScriptedModel(), redis=redis, start=False)
    client = AsyncWebClient(token="xoxb-test", base_url=slack.url)
    try:
        yield Run(svc, client), slack
    finally:
        await slack.stop()


def once(method: str, error: str) -> Callable[[str, dict[str, Any]], str | None]:
    """Refuse the first call of ``method`` with ``error``."""
    left = [error]

    def refuse(called: str, args: dict[str, Any]) -> str | None:
        return left.pop() if called == method and left else None

    return refuse


def milestone(text: str) -> Entry:
    return Entry.post(RUN, "milestone", Rendered(text, _section(text)))


async def test_a_status_post_refused_once_arrives_and_is_updated(
    make_services, real_redis, caplog
) -> None:
    async with slack_run(make_services, real_redis) as (run, slack):
        slack.refusing = once("chat.postMessage", "channel_not_found")
        status = Entry(run=RUN, what="status message", kind="status")
        with caplog.at_level(logging.WARNING, logger="bots.chat.courier"):
            await run.deliver([status], status="Planning")
        refused, posted = slack.of("chat.postMessage")
        assert posted["blocks"] == refused["blocks"] and posted["thread_ts"] == THREAD
        (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert RUN in warning.getMessage() and "channel_not_found" in warning.getMessage()

        slack.refusing = once("chat.update", "message_not_found")
        await run.deliver(status="Running")
        tries = slack.of("chat.update")
        assert len(tries) == 2 and "Running" in tries[-1]["text"], "edited, once more"
        assert len(slack.of("chat.postMessage")) == 2, "not posted anew"
        assert await run.store.drops() == []


async def test_blocks_refused_for_good_are_posted_as_text(make_services, real_redis) -> None:
    async with slack_run(make_services, real_redis) as (run, slack):
        slack.refusing = lambda method, args: "invalid_blocks" if args.get("blocks") else None
        await run.deliver([milestone("Ana finished: fares")])
        *refused, posted = slack.of("chat.postMessage")
        assert len(refused) == 2 and all(r["blocks"] for r in refused)
        assert posted["text"] == "Ana finished: fares" and not posted.get("blocks")
        assert posted["thread_ts"] == THREAD


async def test_a_thread_gone_is_posted_in_the_channel(make_services, real_redis) -> None:
    async with slack_run(make_services, real_redis) as (run, slack):
        slack.refusing = lambda method, args: "thread_not_found" if args.get("thread_ts") else None
        await run.deliver([milestone("Ana finished: fares"), milestone("Bo finished: trains")])
        posted = [p for p in slack.of("chat.postMessage") if "thread_ts" not in p]
        assert [p["text"] for p in posted] == ["Ana finished: fares", "Bo finished: trains"]
        assert all(p["channel"] == CHANNEL for p in posted)


async def test_a_post_refused_every_way_is_dropped_and_noted(
    make_services, real_redis, caplog
) -> None:
    async with slack_run(make_services, real_redis) as (run, slack):
        slack.refusing = lambda method, args: "channel_not_found"
        with caplog.at_level(logging.ERROR, logger="bots.chat.courier"):
            await run.deliver([milestone("Ana finished: fares")])
        assert len(slack.of("chat.postMessage")) == 4
        (error,) = caplog.records
        assert "in every way" in error.getMessage() and "channel_not_found" in error.getMessage()
        (drop,) = await run.store.drops()
        assert drop == {"run": RUN, "what": "milestone", "why": "channel_not_found"}
