"""Team spend from Slack (signed requests into the app, the fake Slack Web API, real
Redis, the scripted model): a mention in a channel over its monthly budget is asked of
the budget's owner in its thread with Approve spending / Deny before anything is
planned; a stranger's click is refused in private naming the owner; the owner's Approve
redraws the ask saying who decided (no buttons) and the run goes on to its result; the
run is counted in the ledger under the channel. ``/caramba budget`` shows the channel's
month to anybody, sets a budget for an admin only, and refuses unreadable words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bots.slack.budget_command import BudgetWords, handle_budget
from bots.slack.home import home_view
from bots.slack.overview import Spend
from bots.slack.spend import SlackPlaces, home_lines
from bots.slack.spend_asks import APPROVE, DENY
from core.config_governance import BudgetRule, GovernanceSettings
from core.runs.outcomes import Refused
from core.runs.spend_budgets import set_budget
from core.runs.spend_report import report as spend_report
from core.spend import ledger
from core.state import spend as kept
from core.types.people import Person
from core.types.run import RunStatus
from tests.integration.slack_harness import click_button, slack_harness
from tests.integration.test_slack_http import (
    ANA,
    CHANNEL,
    MALLORY,
    Harness,
)
from tests.integration.test_slack_slash import slash
from tests.scenarios.test_spend import direct_model

pytestmark = pytest.mark.integration
KEY = f"slack:T1:{CHANNEL}"
ADMIN = "UADM"


def harness(make_services: Any, redis: Any, month_usd: float) -> Any:
    """The bot with #ops's monthly budget ``month_usd``, owned by Ana; UADM an admin."""
    rule = BudgetRule(month_usd=month_usd, owner=ANA, owner_name="Ana", name="#ops")
    gov = GovernanceSettings(channels={KEY: rule}, admins=(ADMIN,))
    return slack_harness(
        make_services,
        redis,
        direct_model(),
        configure=lambda s: s.model_copy(update={"governance": gov}),
        users={ANA: "Ana", MALLORY: "Mal"},
    )


def posted(h: Harness) -> list[dict[str, Any]]:
    return [*h.slack.of("chat.postMessage"), *h.slack.of("chat.update")]


def asks(h: Harness) -> list[dict[str, Any]]:
    return [c for c in h.slack.of("chat.postMessage") if APPROVE in json.dumps(c)]


async def test_over_budget_the_owner_approves_in_the_thread_and_the_run_proceeds(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis, month_usd=0.0) as h:
        await h.mention("What is the capital of France?")
        await h.slack.wait_for(lambda: bool(asks(h)), timeout_s=20)
        (ask,) = asks(h)
        assert ask["thread_ts"] == "1700000000.000100"
        assert "over its channel budget" in ask["text"] and "Ana" in ask["text"]
        assert "<!channel>" not in json.dumps(ask) and "<!here>" not in json.dumps(ask)
        run_id = ask["blocks"][-1]["elements"][0]["value"]
        svc = h.bot.svc
        assert (await svc.store.get_run(run_id)).status is RunStatus.PLANNING
        ts = "1700000000.000300"

        # A stranger's click: refused, only to them, naming the owner.
        await click_button(h, ask, APPROVE, MALLORY, ts)
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postEphemeral")))
        (refusal,) = h.slack.of("chat.postEphemeral")
        assert refusal["user"] == MALLORY and "Only Ana" in refusal["text"]
        assert (await svc.store.get_run(run_id)).status is RunStatus.PLANNING

        # The owner approves: the ask redrawn, who decided, no buttons; the run goes on.
        await click_button(h, ask, APPROVE, ANA, ts)
        await h.slack.wait_for(
            lambda: any(u["ts"] == ts for u in h.slack.of("chat.update")), timeout_s=20
        )
        done = next(u for u in h.slack.of("chat.update") if u["ts"] == ts)
        assert "approved by" in json.dumps(done) and APPROVE not in json.dumps(done)
        for _ in range(400):
            if (await svc.store.get_run(run_id)).status.terminal:
                break
            await h.slack.wait_for(lambda: True)
        run = await svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED
        assert run.place is not None and run.place.key == KEY
        # Counted under the channel once it is folded.
        await ledger.fold_ended(svc)
        rows = await ledger.month_report(svc, ledger.month_of(run.created_at), channel_key=KEY)
        assert {r.run_id for r in rows.rows} == {run_id} and rows.total_usd > 0


async def test_caramba_budget_shows_the_month_and_only_admins_set_it(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis, month_usd=5.0) as h:
        said: list[dict[str, Any]] = []

        async def respond(**kw: Any) -> None:
            said.append(kw)

        places = SlackPlaces(h.bot.client, h.bot.svc)
        command = {"team_id": "T1", "channel_id": CHANNEL, "user_id": MALLORY}
        await handle_budget(h.bot.svc, h.bot.people, places, {**command, "text": "budget"}, respond)
        assert said[-1]["response_type"] == "ephemeral"
        assert "Channel budget: $0 of $5.00 (0%) · owner Ana" in said[-1]["text"]

        await handle_budget(
            h.bot.svc, h.bot.people, places, {**command, "text": "budget $50"}, respond
        )
        assert said[-1]["response_type"] == "ephemeral" and "admins" in said[-1]["text"]

        admin = {**command, "user_id": ADMIN, "text": f"budget $50 owner <@{ANA}|ana>"}
        await handle_budget(h.bot.svc, h.bot.people, places, admin, respond)
        assert said[-1]["response_type"] == "in_channel"
        assert "$50.00 a month" in said[-1]["text"] and "Ana approves" in said[-1]["text"]

        # The App Home shows the channel's month beside the rest.
        lines = await home_lines(h.bot.svc)
        assert lines == [f"• *<#{CHANNEL}>*: $0 of $50.00"]  # Slack shows its name
        view = home_view([], [], Spend(0.0, 0, 0, 0.0), {}, lines).to_dict()
        assert "Channels this month" in json.dumps(view) and "$50.00" in json.dumps(view)

        for bad in ("budget fifty", "budget $50 owner ana", "budget $-3"):
            await handle_budget(h.bot.svc, h.bot.people, places, {**command, "text": bad}, respond)
            assert said[-1]["response_type"] == "ephemeral"
            assert "budget" in said[-1]["text"] or "mention" in said[-1]["text"]


def test_budget_words() -> None:
    w = BudgetWords("budget workspace $1,200.50 owner <@UANA>")
    assert (w.amount, w.scope, w.owner, w.problem) == (1200.5, "workspace", "UANA", "")
    assert BudgetWords("budget").amount is None
    assert "did not understand" in BudgetWords("budget <script>").problem


async def test_slash_caramba_budget_answers_the_person_only(make_services, real_redis) -> None:
    async with harness(make_services, real_redis, month_usd=5.0) as h:
        resp, _ = await slash(h, "budget")
        assert resp.status_code == 200
        await h.slack.wait_for(lambda: bool(h.slack.of("response_url")))
        (said,) = h.slack.of("response_url")
        assert said["response_type"] == "ephemeral" and "of $5.00" in said["text"]
        assert h.slack.of("chat.postMessage") == []  # no run was started for it
        assert await h.bot.svc.store.redis.exists(h.bot.svc.store.keys.spend_open()) == 0
        # The command named the channel: kept for reports and for the bot's mentions.
        assert (await kept.names(h.bot.svc.store))[KEY] == "#general"
        assert (await h.bot.places.place("T1", CHANNEL)).channel_name == "#general"


async def test_the_owner_denies_in_the_thread_and_a_forged_click_is_refused(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis, month_usd=0.0) as h:
        await h.mention("What is the capital of France?")
        await h.slack.wait_for(lambda: bool(asks(h)), timeout_s=20)
        (ask,) = asks(h)
        run_id = ask["blocks"][-1]["elements"][0]["value"]
        ts = "1700000000.000300"
        forged = json.loads(json.dumps(ask))
        for button in forged["blocks"][-1]["elements"]:
            button["value"] = "run_nothere"
        await click_button(h, forged, APPROVE, ANA, ts)
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postEphemeral")))
        assert (
            "does not wait for a spending decision" in h.slack.of("chat.postEphemeral")[0]["text"]
        )

        await click_button(h, ask, DENY, ANA, ts)
        await h.slack.wait_for(
            lambda: any(u["ts"] == ts for u in h.slack.of("chat.update")), timeout_s=20
        )
        done = next(u for u in h.slack.of("chat.update") if u["ts"] == ts)
        assert "denied by" in json.dumps(done) and DENY not in json.dumps(done)
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.FAILED and "Ana did not approve" in (run.error or "")
        await h.slack.wait_for(
            lambda: any(
                "Ana did not approve" in json.dumps(c) for c in h.slack.of("chat.postMessage")
            ),
            timeout_s=20,
        )


async def test_an_ask_whose_run_was_cancelled_loses_its_buttons_at_the_first_click(
    make_services, real_redis
) -> None:
    """Cancelled while it waited: a click (anybody's) redraws the ask saying the request
    ended undecided, without buttons; nothing is planned, no pass is granted."""
    from core.runs.control import cancel_run

    async with harness(make_services, real_redis, month_usd=0.0) as h:
        await h.mention("What is the capital of France?")
        await h.slack.wait_for(lambda: bool(asks(h)), timeout_s=20)
        (ask,) = asks(h)
        run_id = ask["blocks"][-1]["elements"][0]["value"]
        svc = h.bot.svc
        assert (await cancel_run(svc, run_id, ANA, name="Ana")).ok
        ts = "1700000000.000300"
        await click_button(h, ask, APPROVE, MALLORY, ts)
        await h.slack.wait_for(
            lambda: any(u["ts"] == ts for u in h.slack.of("chat.update")), timeout_s=20
        )
        shown = next(u for u in h.slack.of("chat.update") if u["ts"] == ts)
        said = json.dumps(shown)
        assert "ended before anybody decided" in said and "cancelled by Ana" in said
        assert APPROVE not in said and DENY not in said
        assert h.slack.of("chat.postEphemeral") == []
        assert await kept.passed_at(svc.store, run_id) is None
        assert (await svc.store.get_run(run_id)).status is RunStatus.CANCELLED


async def test_the_run_whose_cost_takes_the_month_past_the_line_is_warned_in_its_thread(
    make_services, real_redis
) -> None:
    """No request is at the line when asked; the second run's cost takes #ops past 60 %
    of its budget: its thread says so (before its result), once; the first's and the
    third's threads say nothing about it."""
    gov = GovernanceSettings(warn_at=0.6, admins=(ADMIN,), fold_every_s=0.01)
    async with slack_harness(
        make_services,
        real_redis,
        direct_model(),
        configure=lambda s: s.model_copy(update={"governance": gov}),
        users={ANA: "Ana"},
    ) as h:
        svc = h.bot.svc

        def thread(ts: str) -> list[str]:
            return [c["text"] for c in h.slack.of("chat.postMessage") if c.get("thread_ts") == ts]

        async def mention(n: int) -> str:
            ts = f"1700000000.00{n}000"
            said = {"type": "app_mention", "text": "<@UBOT> Capital of France?", "ts": ts}
            await h.event(f"Ev{n}", {**said, "event_ts": ts})
            await h.slack.wait_for(lambda: bool(thread(ts)), timeout_s=20)
            await h.runs_end()
            return ts

        first = await mention(1)
        await h.runs_end()
        spent = (await spend_report(svc)).total_usd + (await spend_report(svc)).under_way_usd
        assert spent > 0
        admin = Person(id=ADMIN, name="Ada")
        place = await SlackPlaces(h.bot.client, svc).place("T1", CHANNEL)
        made = await set_budget(svc, admin, place, month_usd=spent * 2.1, owner=None)
        assert not isinstance(made, Refused)
        second = await mention(2)
        await h.runs_end()
        said = thread(second)
        warned = [t for t in said if "has spent" in t]
        assert len(warned) == 1 and "95%" in warned[0], said
        third = await mention(3)
        await h.runs_end()
        for ts in (first, third):
            assert not any("has spent" in t for t in thread(ts))
