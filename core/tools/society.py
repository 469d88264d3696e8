"""Tools of the agent society: messaging, creating agents, the roster, waiting.

Their effects are not applied here: messages and new agents are collected on the
context and written in the turn's save transaction, so a re-delivered turn never sends a
message or creates an agent twice.
"""

from __future__ import annotations

import re
import uuid

from core.agent.context import ToolContext
from core.agent.create import new_agent_state
from core.agent.limits import limits_for
from core.errors import ToolRetry
from core.state.routing import RouteRefused, allowed_targets
from core.tools.registry import Tool, tool
from core.types.agent import AgentSpec, Budget
from core.types.chat import Usage
from core.types.messages import TextMessage

MAX_BODY_CHARS = 20_000
# Roles an agent may not create: the top of a cohort is designed by the planner.
_NOT_CREATABLE = frozenset({"orchestrator", "ui", "solo"})


@tool(read_only=False, category="team")
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
async def wait_for_messages(ctx: ToolContext) -> str:
    """End this turn and sleep until a message (or a child's result) arrives."""
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
    return "Waiting: your next turn starts when a message arrives."


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:24] or "team"


@tool(read_only=False, category="team")
async def create_agent(
    ctx: ToolContext,
    name: str,
    role: str,
    purpose: str,
    tools: list[str] | None = None,
    system_prompt: str = "",
    model: str | None = None,
    budget_share: float = 0.2,
    pattern: str | None = None,
) -> str:
    """Create a sub-agent that works for you; its result comes back to you as a message.

    Args:
        name: A short unique name, e.g. "Flight researcher".
        role: "lead" (starts a new team under you), "member" (joins your team), "judge", or
            another configured role.
        purpose: Its brief: what it must do and deliver. It starts working on this at once.
        tools: Tools to give it, from your own tools (messaging and finish are always given).
        system_prompt: Extra instructions appended to its role's prompt.
        model: A model for it (default: the model configured for its role).
        budget_share: The share of your remaining budget (tokens and cost) it gets
            (0.01 to 0.9). What you give is set aside for it and no longer yours.
        pattern: For a lead: its team's playbook (discussion, competition, pipeline, fan_out).
    """
    me = ctx.state
    caps = ctx.settings.agents
    if role in _NOT_CREATABLE or role not in ctx.settings.prompts.roles:
        creatable = sorted(set(ctx.settings.prompts.roles) - _NOT_CREATABLE)
        raise ToolRetry(f"role {role!r} cannot be created; use one of: {', '.join(creatable)}")
    if me.depth + 1 > caps.max_depth:
        raise ToolRetry(
            f"agents at depth {me.depth} may not create agents (max depth "
            f"{caps.max_depth}); do the work yourself or ask your parent"
        )
    if len(me.children) + len(ctx.spawned) >= caps.children_per_agent:
        raise ToolRetry(
            f"you already have {len(me.children) + len(ctx.spawned)} children, "
            f"the limit is {caps.children_per_agent}; reuse them via send_message"
        )
    wanted = list(dict.fromkeys(tools or []))
    unknown = ctx.tools.unknown(wanted)
    if unknown:
        raise ToolRetry(
            f"unknown tools: {', '.join(unknown)}; available: {', '.join(ctx.tools.names())}"
        )
    not_mine = [t for t in wanted if t not in me.spec.tools]
    if not_mine:
        raise ToolRetry(
            f"you can only give tools you have yourself; you lack "
            f"{', '.join(not_mine)} (yours: {', '.join(me.spec.tools)})"
        )
    if await ctx.store.resolve_name(ctx.run_id, name) or any(
        s.spec.name == name for s in ctx.spawned
    ):
        raise ToolRetry(f"an agent named {name!r} already exists; choose another name")
    if not 0.01 <= budget_share <= 0.9:
        raise ToolRetry("budget_share must be between 0.01 and 0.9")
    playbook = ""
    if pattern is not None:
        playbook = _playbook(ctx, pattern, name, purpose)
    limits = limits_for(ctx.settings, me)
    # A child's budget is carved out of its creator's remainder, so the caps of a whole
    # subtree never add up to more than its root's.
    left_tokens = limits.max_tokens - me.usage.total_tokens - me.granted.total_tokens
    left_cost = limits.max_cost_usd - me.usage.cost_usd - me.granted.cost_usd
    tokens = int(left_tokens * budget_share)
    cost = round(max(0.0, left_cost) * budget_share, 6)
    if tokens < 1000:
        raise ToolRetry(
            f"that share leaves the new agent only {tokens} tokens; raise "
            "budget_share or finish the work yourself"
        )
    # The slot is named after this turn and this creation, so a re-delivered turn finds
    # the reservation its earlier delivery made instead of taking another.
    slot = f"{me.spec.id}:{me.seq}:{len(ctx.spawned)}"
    if not await ctx.store.reserve_agent_slot(ctx.run_id, slot, caps.per_run):
        raise ToolRetry(
            f"the run already has {caps.per_run} agents (the limit); reuse "
            "existing agents via send_message"
        )
    team_id = (
        f"team-{_slug(name)}-{uuid.uuid4().hex[:4]}"
        if role == "lead"
        else me.spec.team_id
        if role == "member"
        else None
    )
    base = [t for t in caps.base_tools if t in ctx.tools]
    if model is None and role not in ctx.settings.llm.models:
        model = me.spec.model  # no model for its role: run on its creator's model
    spec = AgentSpec(
        name=name,
        role=role,
        parent_id=me.spec.id,
        team_id=team_id,
        system_prompt=system_prompt,
        tools=tuple(dict.fromkeys([*wanted, *base])),
        model=model,
        budget=Budget(max_tokens=tokens, max_cost_usd=cost),
        description=purpose,
    )
    run = await ctx.store.get_run(ctx.run_id)
    child = new_agent_state(
        ctx,
        ctx.run_id,
        spec,
        task=run.task,
        requester=run.requested_by,
        brief=f"Your brief from {me.spec.name}:\n{purpose}",
        depth=me.depth + 1,
        playbook=playbook,
    )
    ctx.spawned.append(child)
    me.granted = me.granted + Usage(completion_tokens=tokens, cost_usd=cost)
    return (
        f"Created {name} (id {spec.id}, {role}"
        + (f", team {team_id}" if team_id else "")
        + f", {tokens} tokens, ${cost:.4f}). It starts when this turn ends; its result "
        "will come to you as a message."
    )


def _playbook(ctx: ToolContext, pattern: str, name: str, brief: str) -> str:
    template = f"patterns/{pattern}.md.j2"
    available = sorted(
        n.removeprefix("patterns/").removesuffix(".md.j2")
        for n in ctx.prompts.names()
        if n.startswith("patterns/")
    )
    if template not in ctx.prompts.names():
        raise ToolRetry(f"unknown pattern {pattern!r}; available: {', '.join(available)}")
    return ctx.prompts.render(
        template,
        team_name=name,
        members=[],
        brief=brief,
        max_rounds=ctx.settings.agents.discussion_rounds,
    )


SOCIETY_TOOLS: tuple[Tool, ...] = (send_message, roster, wait_for_messages, create_agent)


__all__ = ["SOCIETY_TOOLS"]
