"""Tools of the agent society: messaging, creating agents (``core.tools.creating``), the
roster, waiting.

Their effects are not applied here: messages and new agents are collected on the
context and written in the turn's save transaction, so a re-delivered turn never sends a
message or creates an agent twice.
"""

from __future__ import annotations

from core.agent.context import ToolContext
from core.errors import ToolRetry
from core.state.routing import RouteRefused, allowed_targets
from core.tools.creating import create_agent
from core.tools.registry import Tool, tool
from core.types.messages import TextMessage

MAX_BODY_CHARS = 20_000


@tool(read_only=False, category="team", in_save=True)
async def send_message(ctx: ToolContext, to: str, body: str) -> str:
    """Send a message to another agent, delivered when this turn ends.

    Args:
        to: An agent's name or id (your parent, a child, or a member of your team), or
            "parent", "team" (your team's topic) or "all" (orchestrator only).
        body: The message text.
    """
    if not body.strip():
        raise ToolRetry("the message body is empty")
    if len(body) > MAX_BODY_CHARS:
        raise ToolRetry(
            f"the message is {len(body)} characters; the limit is "
            f"{MAX_BODY_CHARS}. Summarise it or split it."
        )
    bus, spec = ctx.bus, ctx.state.spec
    try:
        route, _label = await bus.route(ctx.run_id, spec, to)
    except RouteRefused as exc:
        raise ToolRetry(f"Message not sent: {exc}") from None
    message = TextMessage(
        run_id=ctx.run_id,
        sender=spec.id,
        recipient=(route.target if route.kind == "agent" else f"{route.kind}:{route.target}"),
        body=body,
    )
    ctx.outbox.append(await bus.outgoing(ctx.run_id, route, message))
    return f"Message queued for {to}; it is delivered when this turn ends."


@tool(category="team")
async def roster(ctx: ToolContext) -> str:
    """Who you may talk to: your parent, your children and your team, with their status."""
    spec = ctx.state.spec
    lines: list[str] = []

    async def describe(agent_id: str, relation: str) -> None:
        found = await ctx.store.load_spec(ctx.run_id, agent_id)
        if found is not None:
            other, status = found
            lines.append(
                f"- {other.name} (id {other.id}, {other.role}, {relation}): "
                f"{status.value}. {other.description}".rstrip()
            )

    if spec.parent_id:
        await describe(spec.parent_id, "your parent")
    for child in [*ctx.state.children]:
        await describe(child, "your child")
    if spec.team_id:
        for member in await ctx.store.team_members(ctx.run_id, spec.team_id):
            if member not in (spec.id, spec.parent_id, *ctx.state.children):
                await describe(member, "your team")
    for new in ctx.spawned:
        lines.append(f"- {new.spec.name} (id {new.spec.id}, {new.spec.role}, your child): starting")
    header = f"You are {spec.name} (id {spec.id}, {spec.role}"
    header += f", team {spec.team_id})." if spec.team_id else ")."
    return "\n".join(
        [header, *(lines or ["- nobody yet"]), f"You may address: {allowed_targets(spec)}."]
    )


@tool(category="team")
async def wait_for_messages(ctx: ToolContext, all_children: bool = False) -> str:
    """End this turn and sleep until a message (or a child's result) arrives.

    Args:
        all_children: Sleep until every child you created has finished: their results are
            read together, in one turn (a message from anyone, a child's included, still
            wakes you).
    """
    if (
        ctx.state.spec.parent_id is None
        and not ctx.state.children
        and not ctx.spawned
        and not ctx.state.spec.team_id
    ):
        raise ToolRetry(
            "Nobody can message you: you have no children and no team. "
            "Create agents first, or call finish."
        )
    ctx.wait = True
    if all_children:
        ctx.wait_for = [*ctx.state.children, *(new.spec.id for new in ctx.spawned)]
        if ctx.wait_for:
            return "Waiting: your next turn starts when all your children have finished."
    return "Waiting: your next turn starts when a message arrives."


SOCIETY_TOOLS: tuple[Tool, ...] = (send_message, roster, wait_for_messages, create_agent)


__all__ = ["SOCIETY_TOOLS"]
