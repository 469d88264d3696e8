"""A run paused at its budget, from Discord (a real discord.py client against the local
Discord, real Redis, the scripted model): the pause has "Extend by 100,000 tokens" and
"Stop here" buttons; Carol (no approver) is refused in private, by name; Bob (an
approver by role) extends it and it runs to its end, the pause then saying who extended
it; Alice's Stop ends another run with what it has."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.types.run import RunStatus
from tests.integration.budget_run import DONE, TASK, spender, tiny_budget
from tests.integration.discord_harness import discord_harness
from tests.integration.test_discord_bot import (
    Harness,
    buttons_of,
    custom_ids,
    layout_text,
)

pytestmark = pytest.mark.integration
Json = dict[str, Any]


def harness(make_services: Any, redis: Any) -> Any:
    return discord_harness(make_services, redis, spender(), configure=tiny_budget)


async def paused(h: Harness) -> tuple[Json, str, Json]:
    """Ask, and wait for the pause: its message, the run's id and the thread."""
    asked = await h.fake.mention("general", "alice", TASK)
    await h.fake.wait_until(lambda: h.fake.thread_of(asked) is not None)
    thread = h.fake.thread_of(asked)
    assert thread is not None

    def pause() -> Json | None:
        for m in h.fake.channel_messages(thread["id"]):
            if "caramba:extend:" in json.dumps(m["components"]):
                return m
        return None

    await h.fake.wait_until(lambda: pause() is not None, 20)
    message = pause()
    assert message is not None
    stop = custom_ids(message)[1]
    return message, stop.rsplit(":", 1)[1], thread


async def test_an_approver_extends_a_paused_run_and_others_are_refused(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        pause, run_id, thread = await paused(h)
        assert pause["flags"] & (1 << 15) and pause["content"] == ""
        assert "Paused at its budget: the run used " in layout_text(pause)
        assert " of 800 tokens" in layout_text(pause)
        buttons = buttons_of(pause)
        assert [b["label"] for b in buttons] == ["Extend by 100,000 tokens", "Stop here"]
        extend = buttons[0]["custom_id"]
        assert extend == f"caramba:extend:tokens:{run_id}"

        refused = await fake.click(pause["id"], extend, "carol")
        await fake.wait_ack(refused)
        await fake.wait_until(lambda: bool(refused.followup_ids))
        said = fake.message(refused.followup_ids[0])
        assert said["flags"] & 64 and said["content"].startswith("Only Alice, who asked")
        assert (await h.svc.store.get_run(run_id)).paused == "tokens"

        click = await fake.click(pause["id"], extend, "bob")
        await fake.wait_ack(click)
        await h.runs_end()
        run = await h.svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.result == DONE
        assert run.history[-2].by == str(fake.person("bob").id)
        edited = fake.message(pause["id"])
        assert "▶ Extended by **Bob**: +100,000 tokens" in layout_text(edited)
        assert "Paused at its budget" in layout_text(edited)
        assert custom_ids(edited) == [], "no buttons left"
        texts = h.thread_texts(thread["id"])
        assert any("The budget was extended: the run goes on" in t for t in texts)
        assert DONE in texts[-1]

    assert fake.pinged() == [] and fake.unguarded_mentions() == []


async def test_stop_ends_a_paused_run_with_what_it_has(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        pause, run_id, thread = await paused(h)
        click = await h.fake.click(pause["id"], f"caramba:stop:{run_id}", "alice")
        await h.fake.wait_ack(click)
        await h.runs_end()
        run = await h.svc.store.get_run(run_id)
        assert run.status is RunStatus.FAILED and run.paused is None  # nobody had finished
        edited = h.fake.message(pause["id"])
        assert "■ Stopped by **Alice**, with the results so far" in layout_text(edited)
        assert custom_ids(edited) == []
        assert "no agent had finished yet" in h.thread_texts(thread["id"])[-1]
