"""A run paused at its budget, from Slack (signed requests into the app, the fake Slack
Web API, real Redis, the scripted model): the pause shows "Extend by 100,000 tokens" and "Stop
here"; someone who may not decide is refused in private, by name; the requester's Extend
resumes the run to its end and the pause says who extended it; Stop ends another run
with what it has."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from core.types.run import RunStatus
from tests.integration.budget_run import DONE, TASK, spender, tiny_budget
from tests.integration.slack_harness import click_button, slack_harness
from tests.integration.test_slack_http import (
    ANA,
    MALLORY,
    Harness,
)

pytestmark = pytest.mark.integration


def harness(make_services: Any, redis: Any) -> Any:
    return slack_harness(make_services, redis, spender(), configure=tiny_budget)


async def paused(h: Harness) -> tuple[dict[str, Any], str, str]:
    """Ask, and wait for the pause: its message (as posted), the run's id and the block
    id of its buttons."""
    await h.mention(TASK)
    posts = h.slack.of

    def pauses() -> list[dict[str, Any]]:
        return [c for c in posts("chat.postMessage") if "caramba_extend" in json.dumps(c)]

    await h.slack.wait_for(lambda: bool(pauses()), timeout_s=20)
    (pause,) = pauses()
    actions = pause["blocks"][-1]
    return pause, actions["elements"][0]["value"], actions["block_id"]


async def click(
    h: Harness, action_id: str, pause: dict[str, Any], block_id: str, user: str
) -> httpx.Response:
    """A click on the pause's button ``action_id`` by ``user``, as Slack sends it."""
    run_id = pause["blocks"][-1]["elements"][0]["value"]
    ts = "1700000000.000777"
    return await click_button(h, pause, action_id, user, ts, block_id=block_id, value=run_id)


def refusals(h: Harness) -> list[str]:
    return [e["text"] for e in h.slack.of("chat.postEphemeral")]


async def test_the_requester_extends_a_paused_run_and_others_are_refused(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        pause, run_id, block_id = await paused(h)
        assert pause["thread_ts"] == "1700000000.000100"
        assert "Paused at its budget: the run used " in pause["text"]
        assert " of 800 tokens" in pause["text"]
        buttons = [b["text"]["text"] for b in pause["blocks"][-1]["elements"]]
        assert buttons == ["Extend by 100,000 tokens", "Stop here"]
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.WAITING_HUMAN and run.paused == "tokens"
        updates = h.slack.of
        await h.slack.wait_for(
            lambda: any("paused at the budget" in u["text"] for u in updates("chat.update"))
        )

        await click(h, "caramba_extend", pause, block_id, MALLORY)
        await h.slack.wait_for(lambda: bool(refusals(h)))
        (refusal,) = h.slack.of("chat.postEphemeral")
        assert refusal["user"] == MALLORY and refusal["text"].startswith("Only <@UANA>, who asked")
        assert (await h.bot.svc.store.get_run(run_id)).paused == "tokens"

        await click(h, "caramba_extend", pause, block_id, ANA)
        await h.runs_end()
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.result == DONE
        edited = next(u for u in h.slack.of("chat.update") if u["ts"] == "1700000000.000777")
        assert "Extended by <@UANA>: +100,000 tokens" in edited["text"]
        assert "caramba_extend" not in json.dumps(edited["blocks"]), "no buttons left"
        texts = [c["text"] for c in h.slack.of("chat.postMessage")]
        assert any("The budget was extended: the run goes on" in t for t in texts)
        assert DONE in texts[-1]

        # A click on the resolved pause does nothing but say why.
        await click(h, "caramba_stop", pause, block_id, ANA)
        await h.slack.wait_for(lambda: len(refusals(h)) == 2)
        assert refusals(h)[-1] == (
            "Not stopped: this run has already finished and is not paused at a limit: "
            "there is nothing to stop."
        )
        assert (await h.bot.svc.store.get_run(run_id)).status is RunStatus.COMPLETED


async def test_stop_ends_a_paused_run_with_what_it_has(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        pause, run_id, block_id = await paused(h)
        await click(h, "caramba_stop", pause, block_id, ANA)
        await h.runs_end()
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.FAILED and run.paused is None  # nobody had finished
        edited = next(u for u in h.slack.of("chat.update") if u["ts"] == "1700000000.000777")
        assert "Stopped by <@UANA>, with the results so far" in edited["text"]
        assert "no agent had finished yet" in h.slack.of("chat.postMessage")[-1]["text"]
        assert "Run failed" in h.slack.of("chat.update")[-1]["text"]
