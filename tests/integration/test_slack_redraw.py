"""The card redrawn after a decision goes through an outbox (``bots.chat.redraw``): with
Slack unreachable for 5 s at the Approve click, the redraw is not lost — once Slack is
back the card shows who approved it, without its Approve / Edit / Reject buttons. And a
rejected run's card is redrawn although its relay ends at once. Against the Slack fake,
real Redis."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from bots.slack.blocks import APPROVE, EDIT, REJECT
from core.types.run import RunStatus
from tests.integration.test_slack_http import ANA, harness

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
