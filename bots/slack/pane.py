"""The agent pane (Slack's ``features.agent_view``; ``assistant_view`` before it): a
thread opened there (``assistant_thread_started``) gets suggested prompts — the tasks
of cohorts saved in the library and the person's recent tasks — and each request a
title (``bots.slack.assistant``). Messages in the pane are direct messages
(``message.im``): ``bots.slack.app`` takes them as requests."""

from __future__ import annotations

import logging
from typing import Any

from bots.slack.context import SlackContext
from bots.slack.overview import recent_runs, saved_cohorts
from bots.slack.text import plain

log = logging.getLogger(__name__)
# Slack shows at most four suggested prompts.
PROMPTS = 4
PROMPT_TITLE_CHARS, PROMPT_CHARS = 60, 2000
STARTERS = (
    "Compare the three cheapest flights from Lisbon to Berlin next month",
    "Summarise this week's open pull requests and who should review them",
)


async def suggested_prompts(ctx: SlackContext, user: str) -> list[dict[str, str]]:
    """Up to four prompts: saved cohorts' tasks, then the person's recent tasks, then a
    few starters (each task once)."""
    tasks = [c.task for c in await saved_cohorts(ctx.svc, PROMPTS)]
    tasks += [r.task for r in await recent_runs(ctx.svc, PROMPTS, user)]
    tasks += list(STARTERS)
    seen: list[str] = []
    for task in tasks:
        if task.strip() and plain(task, PROMPT_CHARS) not in seen:
            seen.append(plain(task, PROMPT_CHARS))
    return [{"title": plain(t, PROMPT_TITLE_CHARS), "message": t} for t in seen[:PROMPTS]]


async def thread_started(ctx: SlackContext, event: dict[str, Any]) -> None:
    """A thread opened in the pane: suggest prompts there."""
    thread = event.get("assistant_thread") or {}
    channel, ts, user = thread.get("channel_id"), thread.get("thread_ts"), thread.get("user_id")
    if not (channel and ts):
        return
    prompts = await suggested_prompts(ctx, user or "")
    await ctx.client.assistant_threads_setSuggestedPrompts(
        channel_id=channel, thread_ts=ts, title="Ask the agents, e.g.", prompts=prompts
    )


def add_pane_listeners(ctx: SlackContext) -> None:
    """Listen to threads opened in the pane (and to their context changing: nothing to
    do, but acknowledged)."""

    async def on_started(event: dict[str, Any]) -> None:
        ctx.spawn(thread_started(ctx, event))

    async def on_context(event: dict[str, Any]) -> None:
        log.debug("assistant thread context changed: %s", event.get("assistant_thread"))

    ctx.app.event("assistant_thread_started")(on_started)
    ctx.app.event("assistant_thread_context_changed")(on_context)
