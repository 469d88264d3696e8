"""Tools that reach people: ask a question, post to the chat, notify someone, remind.

Their effects are intents or turn outcomes, applied once the turn is saved, so a turn
delivered twice never posts or asks twice.
"""

from __future__ import annotations

from core.agent.context import ToolContext
from core.errors import ToolRetry
from core.tools.registry import Tool, tool
from core.types.intents import Notify, PostToChat, Remind

_MAX_POST_CHARS = 40_000
_MAX_REMIND_MINUTES = 7 * 24 * 60


@tool(read_only=False, category="people")
async def ask_user(ctx: ToolContext, question: str) -> str:
    """Ask the people in the chat a question and wait for the answer (ends this turn).

    Use it only when you cannot go on without a person's decision or information.

    Args:
        question: One clear question, with the options if there are any.
    """
    if not question.strip():
        raise ToolRetry("the question is empty")
    if ctx.question is not None:
        raise ToolRetry("you already asked a question this turn; wait for its answer")
    ctx.question = question.strip()[:3000]
    ctx.wait = True
    timeout = ctx.settings.humans.question_timeout_s
    return (
        f"Question posted in the chat. Your next turn starts when someone answers "
        f"(or after {timeout:.0f} s without an answer)."
    )


@tool(read_only=False, category="people")
async def post_to_chat(ctx: ToolContext, text: str, filename: str | None = None) -> str:
    """Post text to the chat thread of this run (once this turn is saved).

    Args:
        text: What to post. Long texts are best sent as a file.
        filename: Post the text as a file with this name (e.g. "report.md").
    """
    if not text.strip():
        raise ToolRetry("the text is empty")
    if len(text) > _MAX_POST_CHARS:
        raise ToolRetry(f"the text is {len(text)} characters; the limit is {_MAX_POST_CHARS}")
    ctx.intents.append(
        PostToChat(run_id=ctx.run_id, agent_id=ctx.agent_id, text=text, filename=filename)
    )
    return "Posted to the chat (delivered when this turn ends)."


@tool(read_only=False, category="people")
async def notify(ctx: ToolContext, who: str, text: str) -> str:
    """Notify a person (mention them in the chat thread) with a short message.

    Args:
        who: The person's handle, e.g. "@ana".
        text: The message.
    """
    if not who.strip() or not text.strip():
        raise ToolRetry("both who and text are needed")
    ctx.intents.append(Notify(run_id=ctx.run_id, agent_id=ctx.agent_id, who=who, text=text))
    return f"{who} will be notified when this turn ends."


@tool(read_only=False, category="people")
async def remind_me(ctx: ToolContext, text: str, after_minutes: float) -> str:
    """Schedule a reminder to yourself: it arrives as a message after the given time.

    Args:
        text: What to remind you of.
        after_minutes: Minutes from now (at most a week).
    """
    if not 0 < after_minutes <= _MAX_REMIND_MINUTES:
        raise ToolRetry(f"after_minutes must be between 0 and {_MAX_REMIND_MINUTES}")
    ctx.intents.append(
        Remind(run_id=ctx.run_id, agent_id=ctx.agent_id, text=text, after_s=after_minutes * 60)
    )
    return f"Reminder set for {after_minutes:g} minutes from now."


HUMAN_TOOLS: tuple[Tool, ...] = (ask_user, post_to_chat, notify, remind_me)
