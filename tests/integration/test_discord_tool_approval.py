"""A tool call waiting for approval, from Discord (a real discord.py client against the
local Discord's gateway and REST, real Redis, the scripted model): the agent's
write_file waits for a click in the run's thread (the tool, the secret in its arguments
masked, the agent's reason); Carol (no approver) is refused in private; Alice's Deny
opens a modal whose reason the agent reads as the call's result; Approve once runs the
call once and the run completes; each decided message says who decided, no buttons."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bots.discord.bot import CarambaBot
from core.types.run import RunStatus
from tests.fakes.discord_api import FakeDiscord
from tests.integration.approval_run import DENIAL, DONE, REASON, SECRET, TASK, asking, told
from tests.integration.approval_run import writer as writer_model
from tests.integration.test_discord_bot import (
    Harness,
    buttons_of,
    custom_ids,
    discord_settings,
    layout_text,
)
from tests.integration.test_slack_http import quick_library
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
Json = dict[str, Any]


@contextlib.asynccontextmanager
async def harness(make_services: Any, redis: Any, model: Any) -> AsyncIterator[Harness]:
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = asking(discord_settings(quick_library(planning_settings(), folder)))
    svc = make_services(s, model, redis=redis)
    try:
        async with FakeDiscord.serving() as fake:
            bot = CarambaBot(svc, guild_ready_timeout=0.05)
            async with fake.running(bot):
                yield Harness(fake, bot)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def requests_in(h: Harness, thread_id: str) -> list[Json]:
    """The requests posted in the thread (decided ones too)."""
    return [m for m in h.fake.channel_messages(thread_id) if "wants to use" in layout_text(m)]


async def nth_request(h: Harness, thread_id: str, n: int) -> Json:
    await h.fake.wait_until(lambda: len(requests_in(h, thread_id)) >= n, 20)
    return requests_in(h, thread_id)[n - 1]


async def test_a_write_waits_is_denied_then_approved_once_and_the_run_completes(
    make_services, real_redis
) -> None:
    model = writer_model()
    async with harness(make_services, real_redis, model) as h:
        fake = h.fake
        asked = await fake.mention("general", "alice", TASK)
        card, run_id = await h.card()
        assert "asks a person before each call" in layout_text(card)
        approve = await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await fake.wait_ack(approve)
        thread = fake.thread_of(asked)
        assert thread is not None

        first = await nth_request(h, thread["id"], 1)
        said = layout_text(first)
        assert first["flags"] & (1 << 15) and first["content"] == ""
        assert "**Writer** wants to use `write_file`" in said
        assert REASON in said
        assert SECRET not in said and "••••" in said
        buttons = buttons_of(first)
        assert [b["label"] for b in buttons] == ["Approve once", "Approve for this run", "Deny"]
        once, _, deny = (b["custom_id"] for b in buttons)
        assert (await h.svc.store.get_run(run_id)).status is RunStatus.WAITING_HUMAN

        refused = await fake.click(first["id"], once, "carol")
        await fake.wait_ack(refused)
        await fake.wait_until(lambda: bool(refused.followup_ids))
        said = fake.message(refused.followup_ids[0])
        assert said["flags"] & 64 and said["content"].startswith("Only Alice, who asked")

        opened = await fake.click(first["id"], deny, "alice")
        await fake.wait_ack(opened)
        (modal_id,) = [m for m in fake.modals if m.startswith("caramba:deny:")]
        submitted = await fake.submit_modal(modal_id, {"reason": DENIAL}, "alice")
        await fake.wait_ack(submitted)
        await fake.wait_until(lambda: custom_ids(fake.message(first["id"])) == [], 10)
        assert f"✖ Denied by **Alice**: {DENIAL}" in layout_text(fake.message(first["id"]))

        second = await nth_request(h, thread["id"], 2)
        print("Writer read:", told(model)[0])
        assert told(model)[0].startswith(f"Denied by Alice: {DENIAL}.")
        once = custom_ids(second)[0]
        click = await fake.click(second["id"], once, "alice")
        await fake.wait_ack(click)
        await h.runs_end()
        run = await h.svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.result == DONE
        await fake.wait_until(lambda: custom_ids(fake.message(second["id"])) == [], 10)
        assert "✔ Approved once by **Alice**." in layout_text(fake.message(second["id"]))
        assert "outputs/report.md" in told(model)[-1]
        assert SECRET.encode() in await h.svc.workspace.read(run_id, "outputs/report.md")

    assert fake.pinged() == [] and fake.unguarded_mentions() == []
