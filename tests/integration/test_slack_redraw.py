"""The card redrawn after a decision goes through an outbox (``bots.chat.redraw``): with
Slack unreachable for 5 s at the Approve click, the redraw is not lost — once Slack is
back the card shows who approved it, without its Approve / Edit / Reject buttons. And a
rejected run's card is redrawn although its relay ends at once; and a redraw queued when
the bot stops mid-outage is delivered, once, by the next bot process. Against the Slack
fake, real Redis."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time

import pytest

from bots.slack.blocks import APPROVE, EDIT, REJECT
from core.types.run import RunStatus
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import (
    ANA,
    harness,
    quick_library,
    scripted,
    serve_bot,
)
from tests.planning_helpers import design
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
OUTAGE_S = 5.0
CARD_TS = "1700000000.000200"


def _card_updates(slack) -> list[dict]:  # type: ignore[no-untyped-def]
    return [u for u in slack.of("chat.update") if u["ts"] == CARD_TS]


@pytest.mark.parametrize("how", ["refused", "5xx"])
async def test_the_card_redrawn_during_an_outage_arrives_after_it(
    make_services, real_redis, how
) -> None:
    async with harness(make_services, real_redis) as h:
        slack = h.slack
        await h.mention("Compare flights to Berlin.")
        _, run_id = await h.card()

        await slack.go_down(how)
        down = time.monotonic()
        assert (await h.click("caramba_approve", run_id, ANA, CARD_TS)).status_code == 200

        for _ in range(250):
            if (await h.bot.svc.store.get_run(run_id)).status is not RunStatus.PROPOSED:
                break
            await asyncio.sleep(0.02)
        assert (await h.bot.svc.store.get_run(run_id)).status is not RunStatus.PROPOSED
        await asyncio.sleep(max(0.0, down + OUTAGE_S - time.monotonic()))
        assert _card_updates(slack) == [], "nothing reached Slack while it was down"
        await slack.come_back()

        await slack.wait_for(lambda: bool(_card_updates(slack)), timeout_s=20)
        (update,) = _card_updates(slack)
        blocks = json.dumps(update["blocks"])
        assert f"Approved by <@{ANA}>" in blocks
        assert not any(button in blocks for button in (APPROVE, EDIT, REJECT)), "buttons gone"
        await h.runs_end(timeout_s=20)
        prefix = h.bot.svc.settings.redis.key_prefix
        left = [k async for k in real_redis.scan_iter(match=f"{prefix}:slack:outbox:*")]
        assert left == [], "the redraw's outbox is empty once delivered"


async def test_a_rejected_card_is_redrawn_although_its_relay_ends_at_once(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        await h.mention("Compare flights to Berlin.")
        _, run_id = await h.card()
        await h.click("caramba_reject", run_id, ANA, CARD_TS)
        await h.bot.drain()
        (update,) = _card_updates(h.slack)
        assert f"Rejected by <@{ANA}>" in json.dumps(update["blocks"])
        assert REJECT not in json.dumps(update["blocks"])


async def test_a_redraw_left_by_a_bot_stopped_mid_outage_arrives_after_a_restart(
    make_services, real_redis
) -> None:
    slack = await FakeSlackAPI().start()
    s = quick_library(planning_settings(), tempfile.mkdtemp(prefix="caramba-lib-"))
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    svc = make_services(s, scripted(design()), redis=real_redis)
    try:
        async with serve_bot(svc, slack) as h:
            await h.mention("Compare flights to Berlin.")
            _, run_id = await h.card()
            await slack.go_down("5xx")
            assert (await h.click("caramba_approve", run_id, ANA, CARD_TS)).status_code == 200
            store = h.bot.relays.outbox.store
            for _ in range(300):  # the redraw is queued (and noted) once the click is decided
                if await store.progress(store.keys.redraws):
                    break
                await asyncio.sleep(0.02)
            assert await store.progress(store.keys.redraws), "the redraw was never queued"
        # That bot is closed, with Slack still down: the redraw stays queued.
        assert _card_updates(slack) == []
        await slack.come_back()
        async with serve_bot(svc, slack) as again:
            await again.bot.start()  # a new bot process takes up what the last one left
            await slack.wait_for(lambda: bool(_card_updates(slack)), timeout_s=20)
            await again.runs_end(timeout_s=30)
            (update,) = _card_updates(slack)  # once
            blocks = json.dumps(update["blocks"])
            assert f"Approved by <@{ANA}>" in blocks
            assert not any(button in blocks for button in (APPROVE, EDIT, REJECT))
            assert await store.progress(store.keys.redraws) == {}, "nothing left to redraw"
    finally:
        await slack.stop()
        shutil.rmtree(s.library.index_dir, ignore_errors=True)
