"""Block Kit messages built from core's views: the proposal card and its outcome, the
status line, and the run's result with its feedback buttons."""

from __future__ import annotations

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextActionsBlock,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    SectionBlock,
)
from slack_sdk.models.blocks.basic_components import FeedbackButtonObject
from slack_sdk.models.blocks.block_elements import FeedbackButtonsElement

from bots.slack.names import content, named_now
from bots.slack.text import MAX_BLOCKS, escape, truncate
from core.runs.approval import AgentCard, ProposalView
from core.types.figures import cost, exact_cost, tokens

APPROVE = "caramba_approve"
REJECT = "caramba_reject"
EDIT = "caramba_edit_open"
CANCEL = "caramba_cancel"
# The feedback_buttons element; each button's value is its vote and the run:
# "caramba_feedback_up:{run id}". FEEDBACK_UP / FEEDBACK_DOWN are also the action ids of
# the buttons results had before it (still answered: bots.slack.feedback).
FEEDBACK = "caramba_feedback"
FEEDBACK_UP = "caramba_feedback_up"
FEEDBACK_DOWN = "caramba_feedback_down"
_MORE = "see the full proposal with `caramba` or ask for details in this thread"


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=truncate(text, pointer=_MORE)))


def _summary(view: ProposalView) -> list[Block]:
    blocks: list[Block] = [
        HeaderBlock(text=truncate(f"Proposal: {named_now(view.task, {})}", 150)),
        _section(f"*Task* (asked by <@{escape(view.requested_by)}>)\n{content(view.task)}"),
    ]
    if view.steps:
        steps = "\n".join(f"{i}. {escape(s)}" for i, s in enumerate(view.steps, 1))
        blocks.append(_section(f"*Plan*\n{steps}"))
    return blocks


def _agent(a: AgentCard) -> SectionBlock:
    under = f" · under {escape(a.parent)}" if a.parent else ""
    budget = tokens(a.max_tokens) if a.max_tokens else "default budget"
    if a.max_cost_usd is not None:
        budget += f", {cost(a.max_cost_usd)}"
    return _section(
        f"*{escape(a.name)}* — {escape(a.role)}{under}\n"
        f"model `{escape(a.model)}` · tools: {escape(', '.join(a.tools)) or 'none'} · {budget}\n"
        + "".join(f":warning: {escape(r)}\n" for r in a.risks)
        + f"> {escape(a.prompt_excerpt[:280]).replace(chr(10), ' ')}"
    )


def _footer(view: ProposalView) -> list[Block]:
    blocks: list[Block] = []
    if view.patterns:
        blocks.append(_section("*Teams* " + "; ".join(escape(p) for p in view.patterns)))
    reuse = []
    if view.reused_from:
        reuse.append(f"Reused cohort: {escape(view.reused_from)}")
    reuse += [f"Reused: {escape(r)}" for r in view.reused]
    if reuse:
        blocks.append(_section("*From the library*\n" + "\n".join(reuse)))
    if view.budget is not None:
        b = view.budget
        spent = view.planning
        planned = (
            f" · planning used {tokens(spent.total_tokens)} ({cost(spent.cost_usd)})"
            if spent is not None
            else ""
        )
        blocks.append(
            ContextBlock(
                elements=[
                    MarkdownTextObject(
                        text=f"Budget: {tokens(b.tokens)} · {exact_cost(b.cost_usd)} · "
                        f"{b.wall_clock_s:.0f} s{planned} · run `{view.run_id}`"
                    )
                ]
            )
        )
    return blocks


def proposal_blocks(view: ProposalView) -> list[Block]:
    """The card: task, plan, agents, teams, reuse, budget, and Approve / Reject buttons."""
    head, tail = _summary(view), _footer(view)
    buttons = ActionsBlock(
        block_id=f"proposal:{view.run_id}",
        elements=[
            ButtonElement(text="Approve", action_id=APPROVE, value=view.run_id, style="primary"),
            ButtonElement(text="Edit", action_id=EDIT, value=view.run_id),
            ButtonElement(text="Reject", action_id=REJECT, value=view.run_id, style="danger"),
        ],
    )
    room = MAX_BLOCKS - len(head) - len(tail) - 3
    agents: list[Block] = [_agent(a) for a in view.agents[:room]]
    if len(view.agents) > room:
        agents.append(_section(f"… and {len(view.agents) - room} more agents ({_MORE})"))
    return [*head, DividerBlock(), *agents, *tail, buttons]


def outcome_blocks(view: ProposalView, note: str) -> list[Block]:
    """The card once decided: the summary without buttons, then ``note`` (mrkdwn, already
    escaped) saying who decided what."""
    return [*_summary(view), *_footer(view), _section(note)]


def fallback_text(view: ProposalView) -> str:
    """Plain text for notifications and clients without blocks."""
    return truncate(f"Proposal for {content(view.task)}", 300)


def status_blocks(line: str, run_id: str, *, running: bool) -> list[Block]:
    """The run's status message: one line (mrkdwn, escaped) and Cancel while it runs."""
    blocks: list[Block] = [_section(line)]
    if running:
        blocks.append(
            ActionsBlock(
                block_id=f"status:{run_id}",
                elements=[ButtonElement(text="Cancel", action_id=CANCEL, value=run_id)],
            )
        )
    return blocks


def feedback_block(run_id: str) -> ContextActionsBlock:
    """Slack's own 👍 / 👎 (a ``feedback_buttons`` element) for run ``run_id``."""
    return ContextActionsBlock(
        block_id=f"feedback:{run_id}",
        elements=[
            FeedbackButtonsElement(
                action_id=FEEDBACK,
                positive_button=FeedbackButtonObject(
                    text="Helpful",
                    accessibility_label="Mark this result helpful",
                    value=f"{FEEDBACK_UP}:{run_id}",
                ),
                negative_button=FeedbackButtonObject(
                    text="Not helpful",
                    accessibility_label="Mark this result not helpful",
                    value=f"{FEEDBACK_DOWN}:{run_id}",
                ),
            )
        ],
    )


def result_blocks(text: str, run_id: str) -> list[Block]:
    """The last message of a run's result: ``text`` (mrkdwn, already escaped) and the
    feedback buttons, whose values name the run."""
    return [SectionBlock(text=MarkdownTextObject(text=truncate(text))), feedback_block(run_id)]
