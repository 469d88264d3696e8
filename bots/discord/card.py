"""The proposal card as a Components V2 layout, built from core's ``ProposalView``: the
task and its plan, a section per agent (role, model, tools and their risks, budget; an
Edit button beside it), the teams and what was reused from the library, and the budget.

Pure data (stored as JSON in the run's outbox): ``{"blocks": [...], "accent": int}``, each
block ``{"text": str}``, ``{"agent": id, "name": str, "text": str}`` or ``{"sep": 1}``;
``bots.discord.layout`` turns it into a ``discord.ui.LayoutView`` with the buttons. Within
Discord's limits for one message: at most 40 components (nested ones counted) and 4,000
characters of text in all — a big cohort folds the rest into "… and N more agents"."""

from __future__ import annotations

from typing import Any

from bots.discord.text import escape, truncate
from core.runs.approval import AgentCard, ProposalView
from core.types.figures import cost, exact_cost, tokens

Layout = dict[str, Any]
# Discord's limits on a Components V2 message.
COMPONENTS_LIMIT = 40
TEXT_LIMIT = 4000
# What the layout adds besides the agents: the container, the heading, the plan, the
# teams and library line, the budget line, the "… more agents" line, two separators,
# and the row of Approve / Edit / Reject / Inspect (1 row + 4 buttons).
_FIXED = 1 + 5 + 2 + 5
# An agent's section: the section, its text and its Edit button.
_PER_AGENT = 3
# Room kept for the line saying who decided (``decided_layout``).
_NOTE_ROOM = 300
_MORE = "ask for details in this thread"
BLURPLE, GREEN, GREY = 0x5865F2, 0x57F287, 0x99AAB5


def _agent(a: AgentCard, excerpt: int) -> str:
    under = f" · under {escape(a.parent)}" if a.parent else ""
    budget = tokens(a.max_tokens) if a.max_tokens else "default budget"
    if a.max_cost_usd is not None:
        budget += f" · {exact_cost(a.max_cost_usd)}"
    tools = escape(", ".join(a.tools)) or "none"
    text = f"**{escape(a.name)}** — {escape(a.role)}{under}\n"
    text += f"-# model `{a.model}` · tools: {tools} · {budget}\n"
    text += "".join(f"⚠️ {escape(r)}\n" for r in a.risks)
    if excerpt and a.prompt_excerpt:
        text += "> " + escape(a.prompt_excerpt[:excerpt]).replace("\n", " ")
    return truncate(text.rstrip("\n"), 1000, _MORE)


def budget_line(view: ProposalView) -> str:
    """``Budget: 20,000 tokens · $0.03 · 1800 s · planning used 2,123 tokens ($0.01)`` (no
    run id: people read names and words; the inspector's link carries the run)."""
    parts: list[str] = []
    if view.budget is not None:
        b = view.budget
        # The run's budget as approved: exact, whatever the planner set ($0.0004 too).
        parts.append(
            f"Budget: {tokens(b.tokens)} · {exact_cost(b.cost_usd)} · {b.wall_clock_s:.0f} s"
        )
    if view.planning is not None:
        spent = view.planning
        parts.append(f"planning used {tokens(spent.total_tokens)} ({cost(spent.cost_usd)})")
    return " · ".join(parts) or "Budget: the defaults"


def _head(view: ProposalView, steps_limit: int) -> str:
    head = f"### Proposal: {escape(truncate(view.task, 200))}\n"
    head += f"Asked by <@{view.requested_by}>: {escape(view.task)}"
    head = truncate(head, 1200, _MORE)
    steps = "\n".join(f"{i}. {escape(s)}" for i, s in enumerate(view.steps, 1))
    if steps and steps_limit:
        head += "\n**Plan**\n" + truncate(steps, steps_limit, _MORE)
    return head


def _extra(view: ProposalView) -> str:
    lines = [f"**Teams:** {'; '.join(escape(p) for p in view.patterns)}"] if view.patterns else []
    if view.reused_from:
        lines.append(f"Reused cohort: {escape(view.reused_from)}")
    lines += [f"Reused: {escape(r)}" for r in view.reused]
    return truncate("\n".join(lines), 800, _MORE)


def _build(view: ProposalView, excerpt: int, steps_limit: int, shown: int) -> list[Layout]:
    blocks: list[Layout] = [{"text": _head(view, steps_limit)}, {"sep": 1}]
    for a in view.agents[:shown]:
        blocks.append({"agent": a.id, "name": a.name, "text": _agent(a, excerpt)})
    if len(view.agents) > shown:
        blocks.append({"text": f"… and {len(view.agents) - shown} more agents ({_MORE})"})
    blocks.append({"sep": 1})
    if extra := _extra(view):
        blocks.append({"text": extra})
    blocks.append({"text": f"-# {escape(budget_line(view))}"})
    return blocks


def text_length(blocks: list[Layout]) -> int:
    return sum(len(b.get("text", "")) for b in blocks)


def proposal_layout(view: ProposalView, room: int = TEXT_LIMIT - _NOTE_ROOM) -> Layout:
    """The card's layout within Discord's limits: prompt excerpts and the plan are
    shortened first, then dropped, then fewer agents are shown, if the whole would be
    longer than ``room`` characters."""
    shown = min(len(view.agents), (COMPONENTS_LIMIT - _FIXED) // _PER_AGENT)
    while True:
        for excerpt, steps in ((280, 1500), (120, 800), (0, 400), (0, 0)):
            blocks = _build(view, excerpt, steps, shown)
            if text_length(blocks) <= room or (shown == 0 and steps == 0):
                return {"blocks": blocks, "accent": BLURPLE}
        shown -= 1


def decided_layout(view: ProposalView, note: str) -> Layout:
    """The card once decided (no buttons), with ``note`` (escaped) saying who did what."""
    layout = proposal_layout(view)
    note = truncate(note, _NOTE_ROOM - 10)
    layout["blocks"].insert(1, {"text": note})
    layout["accent"] = GREEN if "Approved" in note else GREY
    return layout


def edited_layout(view: ProposalView, editor: str) -> Layout:
    """The card after an edit: its budget line says who edited it."""
    layout = proposal_layout(view)
    last = layout["blocks"][-1]
    last["text"] = truncate(f"{last['text']} · edited by {escape(editor)}", 500)
    return layout
