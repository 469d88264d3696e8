"""The durable outbox: with Slack unreachable (connections refused, or HTTP 503) for 5 s
as a run ends, the relay still reads the run to its end, and once Slack answers again
every milestone and the result arrive, in order and once each, and the status message
shows the ended run (no Cancel button)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest

from bots.slack.blocks import CANCEL, FEEDBACK_UP
from core.llm.base import LLMRequest, LLMResponse
from core.llm.scripted import Reply, call
from core.types.events import AgentCreated, AgentFinished, RunFinished
from core.types.run import RunStatus
from tests.helpers import collect
from tests.integration.test_slack_http import ANA, harness, responder

pytestmark = pytest.mark.integration
OUTAGE_S = 5.0
# The agents of the usual design (tests.planning_helpers.design); planning is not held.
AGENTS = {"Orchestrator", "Lead A", "Scout A", "Lead B", "Judge"}


# Who waits for whom: each parent finishes only once these reports came.
REPORTS = {"Orchestrator": ("Lead A", "Lead B", "Judge"), "Lead A": ("Scout A",)}


def patient(request: Any) -> Reply:
    """As usual, but a parent finishes once its reports have (so that the run has several
    milestones before its end, and no member is cancelled by its lead finishing first)."""
    said = json.dumps([m.content for m in request.messages])
    reports = REPORTS.get(request.agent_name or "", ())
    if not all(f"{name} says" in said for name in reports):
        return Reply(calls=(call("wait_for_messages", {"all_children": True}),))
    return responder(request)


@pytest.mark.parametrize("how", ["refused", "5xx"])
async def test_a_run_that_ends_while_slack_is_down_is_shown_in_full_afterwards(
    make_services, real_redis, how, caplog
) -> None:
    async with harness(make_services, real_redis) as h:
        svc, slack = h.bot.svc, h.slack
        # The agents answer once the test lets them: Slack goes down first.
        go = asyncio.Event()
        complete = svc.llm.complete

        async def held(request: LLMRequest) -> LLMResponse:
            if request.agent_name in AGENTS:
                await go.wait()
            return await complete(request)

        svc.llm.complete = held  # type: ignore[method-assign]
        svc.llm.responder = patient  # type: ignore[attr-defined]
        await h.mention("Compare flights to Berlin.")
        _, run_id = await h.card()
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.bot.drain()  # the card says who approved it
        await slack.wait_for(
            lambda: any("agents" in c["text"] for c in slack.of("chat.postMessage"))
        )
        (status,) = [c for c in slack.of("chat.postMessage") if "agents" in c["text"]]

        with caplog.at_level(logging.WARNING, logger="bots.chat.courier"):
            await slack.go_down(how)
            # Counted once it is down: a call already under way when the outage began is
            # still answered (the fake's graceful stop) and is not one that got through.
            before = len(slack.calls)
            down = time.monotonic()
            go.set()
            events = await collect(svc, run_id)  # the run ends while Slack is down
            assert (await svc.store.get_run(run_id)).status is RunStatus.COMPLETED
            # The relay read the run to its end meanwhile: nothing waited for Slack.
            relayed = await _until(lambda: _relayed_to(h, run_id), OUTAGE_S)
            await asyncio.sleep(max(0.0, down + OUTAGE_S - time.monotonic()))
            assert len(slack.calls) == before, "nothing got through while Slack was down"
            await slack.come_back()
            up = time.monotonic()
            await h.runs_end(timeout_s=15)  # the relay ends once its outbox is delivered
            delivered = time.monotonic() - up
        print(
            f"\n[{how}] relayed to the run's end {relayed:.2f} s into the outage; "
            f"{len(slack.calls) - before} calls delivered {delivered:.2f} s after Slack came back"
        )
        assert "did not reach Slack" in caplog.text, "the failed tries were logged"
        if how == "5xx":
            assert slack.failed, "the courier tried during the outage"
        assert delivered < 8.0, "the back-off is capped: not long after Slack is back"

        # Every milestone, then the result, in the order of the run's events, once each;
        # agents with agents under them (the leads, the orchestrator) sum their work up,
        # so their texts come up above them or as the result, not as milestones.
        names = {e.agent_id: e.name for e in events if isinstance(e, AgentCreated)}
        leads = {e.parent_id for e in events if isinstance(e, AgentCreated)}
        milestones = [
            f"*{names[e.agent_id]}* finished:\n{e.result}"
            for e in events
            if isinstance(e, AgentFinished) and e.agent_id and e.result
            if e.agent_id not in leads
        ]
        posts = slack.of("chat.postMessage")
        after_status = posts[posts.index(status) + 1 :]
        assert len(milestones) >= 3
        assert [p["text"] for p in after_status[:-1]] == milestones
        result = after_status[-1]
        assert "Orchestrator says: 3 flights" in result["text"]
        assert FEEDBACK_UP in json.dumps(result["blocks"]), "the result, last, with buttons"
        assert all(p["thread_ts"] == "1700000000.000100" for p in posts)

        # The status message shows the ended run, without Cancel.
        status_ts = "1700000000.000200"
        ours = [u for u in slack.of("chat.update") if u["ts"] != status_ts]
        assert ours, "the status message was updated"
        final = ours[-1]
        assert "Run completed" in final["text"]
        assert CANCEL not in json.dumps(final["blocks"])
        assert await h.bot.threads.unfinished() == []
        prefix = svc.settings.redis.key_prefix
        assert not [k async for k in real_redis.scan_iter(match=f"{prefix}:slack:outbox:*")]


async def _relayed_to(h: Any, run_id: str) -> bool:
    """Whether the relay queued the run's events up to its run_finished."""
    shown = {s.run_id: s for s in await h.bot.threads.unfinished()}.get(run_id)
    events = await h.bot.svc.store.read_events(run_id, count=10_000)
    end = next(i for i, e in events if isinstance(e, RunFinished))
    return shown is not None and shown.last == end


async def _until(check: Any, timeout_s: float) -> float:
    """Wait for the coroutine function ``check`` to say yes; the seconds it took."""
    start = time.monotonic()
    while not await check():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"not within {timeout_s} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - start
