"""One budget path, on every adapter (issue 22): a request as each adapter takes it — a
Slack mention (signed HTTP into the app), a Discord mention (a real discord.py client),
the web chat's form, ``caramba run`` in its own process — is planned by a worker's
``core.runs.requests`` (the console: in process, through ``propose_run``); the card
shows the budget the planner designed (20,000 tokens, $0.03 — not the configured
1,000,000 tokens and $5.00); the approved run spends up to it and pauses there
(``budget_reached``); Extend lets it finish.

The card's budget line and the pause as each adapter rendered them are printed
(``pytest -rP`` shows them).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.discord.bot import CarambaBot
from core.services import Services
from core.types.events import BudgetReached
from core.types.run import RunBudget, RunStatus
from tests.fakes import console_llm
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.llm_server import ThreadedFakeLLMServer
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration import test_discord_bot as discord_test
from tests.integration import test_slack_http as slack_test
from tests.integration.budget_run import (
    DONE,
    PLANNED_TASK,
    PLANNED_TOKENS,
    PLANNED_USD,
    planned_spender,
)
from tests.integration.test_console_cli import _env, _run
from tests.integration.test_slack_budget import click as click_pause
from tests.integration.test_web_chat import chat_app, client, post, until
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
# What the pause says on every chat adapter (bots.chat.pause.pause_text).
PAUSED = "⏸ Paused at its budget: the run spent $0.03 of $0.03."


async def _planned_budget_ran(svc: Services, run_id: str) -> None:
    """The run was approved with the planner's budget, paused once at its cost and was
    extended to its end."""
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED and run.result == DONE
    assert run.cohort is not None and [a.name for a in run.cohort.agents] == ["Summer"]
    reached = [e for _, e in await svc.store.read_events(run_id) if isinstance(e, BudgetReached)]
    assert len(reached) == 1 and reached[0].what == "cost"
    assert reached[0].cost_usd == pytest.approx(PLANNED_USD)
    # Extended by [humans] extend_cost_usd: the budget approved, plus the extension.
    humans = svc.settings.humans
    assert run.budget == RunBudget(
        tokens=PLANNED_TOKENS + humans.extend_tokens,
        cost_usd=PLANNED_USD + humans.extend_cost_usd,
        wall_clock_s=svc.settings.limits.wall_clock_s + humans.extend_wall_clock_s,
    )


async def _approved_budget(svc: Services, run_id: str) -> RunBudget:
    """The budget the run was proposed with (before any extension)."""
    run = await svc.store.get_run(run_id)
    assert run.budget is not None
    return run.budget


def _planned(svc: Services) -> RunBudget:
    return RunBudget(
        tokens=PLANNED_TOKENS, cost_usd=PLANNED_USD, wall_clock_s=svc.settings.limits.wall_clock_s
    )


@contextlib.asynccontextmanager
async def _slack(make_services: Any, redis: Any) -> AsyncIterator[slack_test.Harness]:
    fake = await FakeSlackAPI().start()
    s = slack_test.quick_library(planning_settings(), tempfile.mkdtemp(prefix="caramba-lib-"))
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": fake.url})})
    svc = make_services(s, planned_spender(), redis=redis)
    try:
        async with slack_test.serve_bot(svc, fake) as h:
            yield h
    finally:
        await fake.stop()
        shutil.rmtree(s.library.index_dir, ignore_errors=True)


async def test_slack_mention_card_shows_the_planned_budget_and_pauses_there(
    make_services, real_redis
) -> None:
    async with _slack(make_services, real_redis) as h:
        await h.mention(PLANNED_TASK)
        card, run_id = await h.card()
        assert await _approved_budget(h.bot.svc, run_id) == _planned(h.bot.svc)
        (budget_line,) = re.findall(
            r"Budget: [^`]*", json.dumps(card["blocks"], ensure_ascii=False)
        )
        print("Slack card:", budget_line)
        assert budget_line.startswith("Budget: 20,000 tokens · $0.03 · 1800 s")

        await h.click("caramba_approve", run_id, slack_test.ANA, "1700000000.000200")
        posts = h.slack.of

        def pauses() -> list[dict[str, Any]]:
            return [c for c in posts("chat.postMessage") if "caramba_extend" in json.dumps(c)]

        await h.slack.wait_for(lambda: bool(pauses()), timeout_s=20)
        (pause,) = pauses()
        print("Slack pause:", pause["text"])
        assert pause["text"].startswith(PAUSED)
        buttons = [b["text"]["text"] for b in pause["blocks"][-1]["elements"]]
        assert buttons == ["Extend by $2.00", "Stop here"]
        assert (await h.bot.svc.store.get_run(run_id)).paused == "cost"

        block_id = pause["blocks"][-1]["block_id"]
        await click_pause(h, "caramba_extend", pause, block_id, slack_test.ANA)
        await h.runs_end()
        await _planned_budget_ran(h.bot.svc, run_id)
        assert DONE in h.slack.of("chat.postMessage")[-1]["text"]


@contextlib.asynccontextmanager
async def _discord(make_services: Any, redis: Any) -> AsyncIterator[discord_test.Harness]:
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = discord_test.discord_settings(slack_test.quick_library(planning_settings(), folder))
    svc = make_services(s, planned_spender(), redis=redis)
    try:
        async with FakeDiscord.serving() as fake:
            bot = CarambaBot(svc, guild_ready_timeout=0.05)
            async with fake.running(bot):
                yield discord_test.Harness(fake, bot)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_discord_mention_card_shows_the_planned_budget_and_pauses_there(
    make_services, real_redis
) -> None:
    async with _discord(make_services, real_redis) as h:
        fake = h.fake
        asked = await fake.mention("general", "alice", PLANNED_TASK)
        card, run_id = await h.card()
        assert await _approved_budget(h.svc, run_id) == _planned(h.svc)
        footer = discord_test.layout_text(card).rsplit("\n", 1)[-1]
        print("Discord card:", footer)
        assert footer.startswith("-# Budget: 20,000 tokens · $0.03 · 1800 s")

        approve = await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await fake.wait_ack(approve)
        thread = fake.thread_of(asked)
        assert thread is not None

        def pause() -> dict[str, Any] | None:
            for m in fake.channel_messages(thread["id"]):
                if "caramba:extend:" in json.dumps(m["components"]):
                    return m
            return None

        await fake.wait_until(lambda: pause() is not None, 20)
        message = pause()
        assert message is not None
        print("Discord pause:", discord_test.layout_text(message))
        assert discord_test.layout_text(message).startswith(PAUSED)
        extend = discord_test.buttons_of(message)[0]
        assert extend["label"] == "Extend by $2.00"
        assert (await h.svc.store.get_run(run_id)).paused == "cost"

        click = await fake.click(message["id"], extend["custom_id"], "alice")
        await fake.wait_ack(click)
        await h.runs_end()
        await _planned_budget_ran(h.svc, run_id)
        assert DONE in h.thread_texts(thread["id"])[-1]


async def test_web_chat_form_card_shows_the_planned_budget_and_pauses_there(settings) -> None:
    async with chat_app(settings, model=planned_spender()) as (app, svc), client(app) as c:
        asked = await post(c, "/chat", task=PLANNED_TASK)
        assert asked.status_code == 303
        path = asked.headers["location"]
        run_id = path.rsplit("/", 1)[1]
        card = await until(c, path, r'value="approve"')
        assert await _approved_budget(svc, run_id) == _planned(svc)
        (budget_line,) = re.findall(r"Budget: [^<]*", card)
        print("Web card:", budget_line)
        assert budget_line == "Budget: 20,000 tokens, $0.03"

        assert (await post(c, f"{path}/act", action="approve")).status_code == 303
        page = await until(c, path, r'value="extend"')
        (pause,) = re.findall(r'<span class="pause">([^<]*)</span>', page)
        print("Web pause:", pause)
        assert pause.startswith(PAUSED)
        assert ">Extend by $2.00</button>" in page
        assert (await svc.store.get_run(run_id)).paused == "cost"

        assert (await post(c, f"{path}/act", action="extend")).status_code == 303
        await until(c, path, re.escape(DONE))
        await until(c, path, r"completed")
        await _planned_budget_ran(svc, run_id)


@pytest.fixture(scope="module")
def llm_server() -> Any:
    with ThreadedFakeLLMServer() as fake:
        fake.set_responder(console_llm.respond)
        yield fake


def test_console_run_card_shows_the_planned_budget_and_pauses_there(
    llm_server: ThreadedFakeLLMServer, tmp_path: Path
) -> None:
    """``caramba run "spend it"`` in its own process against the OpenAI-compatible fake:
    the planner designs $1.50 (tests/fakes/console_llm.py), each call costs $1; the card
    says so, the run pauses at it, Extend (typed ``e``, then Enter for $2.00) finishes."""
    priced = f'{{"openai/fake-model": {{"input_per_mtok": {console_llm.PRICE["input_per_mtok"]}}}}}'
    env = _env(llm_server, tmp_path, CARAMBA_LLM__PRICES=priced)
    done = _run(env, "a\ne\n\n\n\n\n", "spend it")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    (budget_line,) = re.findall(r"Budget for the whole run: [^│\n]*", out)
    (pause,) = re.findall(r"⏸ paused: [^\n]*", out)
    print("Console card:", budget_line.strip())
    print("Console pause:", pause)
    assert budget_line.strip() == "Budget for the whole run: 200,000 tokens · $1.50 · 30 min"
    assert pause.startswith("⏸ paused: the run spent $2.00 of $1.50")
    assert "extended by $2.00 (now 400,000 tokens · $3.50" in out
    assert "Spent enough: 3 sums." in out and "completed ·" in out
