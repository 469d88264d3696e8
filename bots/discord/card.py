"""The proposal card as a Discord embed, built from core's ``ProposalView``: the task and
its plan, each agent with its role, model, tools and their risks, the agents and cohort
reused from the library with their record, and the budget. Its buttons are in
``bots.discord.views``."""

from __future__ import annotations

import discord

from bots.discord.text import escape, truncate
from core.runs.approval import AgentCard, ProposalView
from core.types.figures import exact_cost, tokens

# Discord's embed limits.
TITLE_LIMIT = 256
DESCRIPTION_LIMIT = 4096
FIELD_LIMIT = 1024
FIELDS = 25
TOTAL_LIMIT = 6000
_MORE = "ask for details in this thread"
COLOUR = discord.Colour.blurple()


def _agent(a: AgentCard, excerpt: int) -> tuple[str, str]:
    under = f" · under {escape(a.parent)}" if a.parent else ""
    budget = f"{a.max_tokens} tokens" if a.max_tokens else "default budget"
    if a.max_cost_usd is not None:
        budget += f", ${a.max_cost_usd:.2f}"
    tools = escape(", ".join(a.tools)) or "none"
    value = f"model `{a.model}` · tools: {tools} · {budget}\n"
    value += "".join(f"⚠️ {escape(r)}\n" for r in a.risks)
    if excerpt:
        value += "> " + escape(a.prompt_excerpt[:excerpt]).replace("\n", " ")
    name = f"{escape(a.name)} — {escape(a.role)}{under}"
    return truncate(name, TITLE_LIMIT), truncate(value, FIELD_LIMIT)


def _budget(view: ProposalView) -> str:
    parts: list[str] = []
    if view.budget is not None:
        b = view.budget
        # The run's budget as approved: exact, whatever the planner set ($0.0004 too).
        parts.append(
            f"Budget: {tokens(b.tokens)} · {exact_cost(b.cost_usd)} · {b.wall_clock_s:.0f} s"
        )
    if view.planning is not None:
        spent = view.planning
        parts.append(f"planning used {spent.total_tokens} tokens (${spent.cost_usd:.4f})")
    parts.append(f"run {view.run_id}")
    return " · ".join(parts)


def _build(view: ProposalView, excerpt: int, steps_limit: int) -> discord.Embed:
    steps = "\n".join(f"{i}. {escape(s)}" for i, s in enumerate(view.steps, 1))
    description = f"**Task** (asked by <@{view.requested_by}>)\n{escape(view.task)}"
    if steps:
        description += "\n\n**Plan**\n" + truncate(steps, steps_limit, _MORE)
    embed = discord.Embed(
        title=truncate(f"Proposal: {view.task}", TITLE_LIMIT),
        description=truncate(description, DESCRIPTION_LIMIT, _MORE),
        colour=COLOUR,
    )
    extra: list[tuple[str, str]] = []
    if view.patterns:
        extra.append(("Teams", "; ".join(escape(p) for p in view.patterns)))
    reuse = [f"Reused cohort: {escape(view.reused_from)}"] if view.reused_from else []
    reuse += [f"Reused: {escape(r)}" for r in view.reused]
    if reuse:
        extra.append(("From the library", "\n".join(reuse)))
    room = FIELDS - len(extra) - 1
    for a in view.agents[:room]:
        name, value = _agent(a, excerpt)
        embed.add_field(name=name, value=value, inline=False)
    if len(view.agents) > room:
        left = len(view.agents) - room
        embed.add_field(name="…", value=f"and {left} more agents ({_MORE})", inline=False)
    for name, value in extra:
        embed.add_field(name=name, value=truncate(value, FIELD_LIMIT, _MORE), inline=False)
    embed.set_footer(text=_budget(view))
    return embed


def proposal_embed(view: ProposalView) -> discord.Embed:
    """The card's embed, within Discord's 6,000 characters in all: prompt excerpts and
    the plan are shortened first, then dropped, if the whole would be longer."""
    for excerpt, steps in ((280, 1500), (120, 800), (0, 400), (0, 0)):
        embed = _build(view, excerpt, steps)
        if len(embed) <= TOTAL_LIMIT:
            return embed
    # Many long agent names: keep the summary only.
    embed = discord.Embed(
        title=truncate(f"Proposal: {view.task}", TITLE_LIMIT),
        description=truncate(escape(view.task), 2000, _MORE),
        colour=COLOUR,
    )
    embed.add_field(name="Agents", value=f"{len(view.agents)} ({_MORE})", inline=False)
    embed.set_footer(text=_budget(view))
    return embed


def decided_embed(view: ProposalView, note: str) -> discord.Embed:
    """The card once decided (no buttons), with ``note`` (escaped) saying who did what."""
    embed = proposal_embed(view)
    embed.colour = discord.Colour.green() if "Approved" in note else discord.Colour.dark_grey()
    room = DESCRIPTION_LIMIT - len(note) - 2
    embed.description = truncate(embed.description or "", room, _MORE) + "\n\n" + note
    if len(embed) > TOTAL_LIMIT:
        embed.clear_fields()
    return embed
