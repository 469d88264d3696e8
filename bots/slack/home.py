"""The App Home tab: ``app_home_opened`` → ``views.publish`` with the person's recent
runs (everyone's when they asked for none yet), the cohorts saved in the library and what
this month's runs spent (``bots.slack.overview``). Words only: no ids, no config keys."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from slack_sdk.models.blocks import (
    Block,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bots.slack.context import SlackContext
from bots.slack.names import named_now
from bots.slack.overview import RunLine, SavedCohort, Spend, month_spend, recent_runs
from bots.slack.overview import saved_cohorts as library_cohorts
from bots.slack.spend import home_lines
from bots.slack.text import plain, truncate
from core.types.figures import cost, tokens

log = logging.getLogger(__name__)
RUNS, COHORTS = 8, 8
_STATUS = {
    "completed": "done",
    "failed": "failed",
    "cancelled": "cancelled",
    "rejected": "rejected",
    "running": "running",
    "planning": "planning",
    "proposed": "waiting for approval",
    "waiting_human": "waiting for an answer",
    "approved": "starting",
}


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%d %b %H:%M UTC")


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=truncate(text)))


def _text(text: str, limit: int, known: dict[str, str]) -> str:
    return named_now(plain(text, limit), known)


def _run(r: RunLine, known: dict[str, str]) -> str:
    status = _STATUS.get(r.status, r.status.replace("_", " "))
    used = f"{tokens(r.tokens)} · {cost(r.cost_usd)}" if r.tokens else "nothing spent yet"
    return f"• *{_text(r.task, 140, known)}*\n   {status} · {_when(r.created_at)} · {used}"


def _cohort(c: SavedCohort, known: dict[str, str]) -> str:
    used = {0: "", 1: " · used once"}.get(c.runs, f" · used {c.runs} times")
    about = "" if c.name == c.task else f" — {_text(c.task, 120, known)}"
    return f"• *{_text(c.name, 80, known)}*{about}{used}"


def home_view(
    runs: list[RunLine],
    cohorts: list[SavedCohort],
    spend: Spend,
    known: dict[str, str] | None = None,
    channels: list[str] | None = None,
) -> View:
    """The Home tab: spend, recent runs, saved cohorts (within Block Kit's limits);
    ``known``: people's names by Slack id (mentions in tasks shown as them)."""
    known = known or {}
    month = datetime.fromtimestamp(spend.since, UTC).strftime("%B %Y")
    blocks: list[Block] = [
        HeaderBlock(text="Caramba"),
        _section(
            f"*Spend in {month}*: {cost(spend.cost_usd)} · {tokens(spend.tokens)} "
            f"over {spend.runs} run{'s' if spend.runs != 1 else ''}"
        ),
        *(
            [_section("*Channels this month*\n" + "\n".join(channels))]
            if channels  # the spend ledger's (bots.slack.spend.home_lines)
            else []
        ),
        DividerBlock(),
        HeaderBlock(text="Recent runs"),
        _section("\n".join(_run(r, known) for r in runs) or "No runs yet: mention me with a task."),
        DividerBlock(),
        HeaderBlock(text="Saved cohorts"),
        _section(
            "\n".join(_cohort(c, known) for c in cohorts)
            or "No cohorts saved yet: approved runs that went well are kept here."
        ),
        ContextBlock(
            elements=[
                MarkdownTextObject(
                    text="Ask by mentioning me in a channel, in a direct message, or with /caramba."
                )
            ]
        ),
    ]
    return View(type="home", blocks=blocks)


async def publish_home(ctx: SlackContext, user: str) -> None:
    """Publish ``user``'s Home tab."""
    runs = await recent_runs(ctx.svc, RUNS, user) or await recent_runs(ctx.svc, RUNS)
    cohorts = await library_cohorts(ctx.svc, COHORTS)
    try:
        channels = await home_lines(ctx.svc)
    except Exception:  # the Home still shows without the ledger's lines
        log.exception("reading the spend ledger for the Home tab failed")
        channels = []
    view = home_view(runs, cohorts, await month_spend(ctx.svc), ctx.people.names, channels)
    await ctx.client.views_publish(user_id=user, view=view)


def add_home_listener(ctx: SlackContext) -> None:
    """Publish the Home tab each time a person opens it."""

    async def on_home(event: dict[str, Any]) -> None:
        if event.get("tab", "home") == "home" and event.get("user"):
            ctx.spawn(publish_home(ctx, event["user"]))

    ctx.app.event("app_home_opened")(on_home)
