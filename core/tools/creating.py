"""The ``create_agent`` tool: an agent creates a sub-agent that works for it, within the
run's caps (depth, children per agent, agents per run), with tools it has itself and a
share of its own remaining budget. The new agent is staged on the context and created in
the turn's save transaction, so a re-delivered turn never creates it twice.

May call the tool context (store reads, settings, prompts, the tool registry) and
``core.agent`` (create, limits); never the Redis client."""

from __future__ import annotations

import re
import uuid

from core.agent.context import ToolContext
from core.agent.create import new_agent_state
from core.agent.limits import limits_for
from core.errors import ToolRetry
from core.state.agents import room_for
from core.tools.registry import tool
from core.types.agent import AgentSpec, Budget
from core.types.chat import Usage
from core.types.run import RunState

# Roles an agent may not create: the top of a cohort is designed by the planner.
_NOT_CREATABLE = frozenset({"orchestrator", "ui", "solo"})
# A new agent needs at least this many tokens to be worth creating.
_MIN_TOKENS = 1000
_NAME_TAKEN = "an agent named {name!r} already exists; choose another name"


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
    _check_role(ctx, role)
    _check_room(ctx)
    wanted = _check_tools(ctx, tools)
    if any(s.spec.name == name for s in ctx.spawned):
        raise ToolRetry(_NAME_TAKEN.format(name=name))
    terms, refused = ("", Usage()), None
    try:
        terms = _terms(ctx, name, purpose, budget_share, pattern)
    except ToolRetry as exc:  # said after the name's check, as ever
        refused = exc
    run = await _take_room(ctx, name, refused)
    playbook, grant = terms
    spec = _spec(ctx, name, role, purpose, wanted, system_prompt, model, grant)
    _stage(ctx, spec, playbook, grant, run)
    team = f", team {spec.team_id}" if spec.team_id else ""
    return (
        f"Created {name} (id {spec.id}, {role}{team}, {grant.completion_tokens} tokens, "
        f"${grant.cost_usd:.4f}). It starts when this turn ends; its result will come to "
        "you as a message."
    )


def _terms(
    ctx: ToolContext, name: str, purpose: str, share: float, pattern: str | None
) -> tuple[str, Usage]:
    """The new agent's playbook and budget, checked without Redis."""
    if not 0.01 <= share <= 0.9:
        raise ToolRetry("budget_share must be between 0.01 and 0.9")
    playbook = "" if pattern is None else _playbook(ctx, pattern, name, purpose)
    return playbook, _grant(ctx, share)


async def _take_room(ctx: ToolContext, name: str, refused: ToolRetry | None) -> RunState:
    """One round trip: the name checked against the run's agents, the run read and —
    unless the terms were ``refused`` — one of the run's agent slots taken. The slot is
    named after this turn and this creation, so a re-delivered turn finds the reservation
    its earlier delivery made instead of taking another."""
    me, per_run = ctx.state, ctx.settings.agents.per_run
    slot = "" if refused else ctx.store.keys.agent_slot(me.spec.id, me.seq, len(ctx.spawned))
    room = await room_for(ctx.store, ctx.run_id, name, slot, per_run)
    if room.name_taken:
        raise ToolRetry(_NAME_TAKEN.format(name=name))
    if refused is not None:
        raise refused
    if not room.slot_taken:
        raise ToolRetry(
            f"the run already has {per_run} agents (the limit); reuse "
            "existing agents via send_message"
        )
    return room.run


def _stage(ctx: ToolContext, spec: AgentSpec, playbook: str, grant: Usage, run: RunState) -> None:
    """The new agent, ready for its first turn, joins the turn's staged agents (created
    in its save); its budget is set aside from its creator's."""
    me = ctx.state
    child = new_agent_state(
        ctx,
        ctx.run_id,
        spec,
        task=run.task,
        requester=run.requested_by,
        brief=f"Your brief from {me.spec.name}:\n{spec.description}",
        depth=me.depth + 1,
        playbook=playbook,
    )
    ctx.spawned.append(child)
    me.granted = me.granted + grant


def _check_role(ctx: ToolContext, role: str) -> None:
    roles = ctx.settings.prompts.roles
    if role in _NOT_CREATABLE or role not in roles:
        creatable = sorted(set(roles) - _NOT_CREATABLE)
        raise ToolRetry(f"role {role!r} cannot be created; use one of: {', '.join(creatable)}")


def _check_room(ctx: ToolContext) -> None:
    """The tree's depth and the creator's children stay within the caps."""
    me, caps = ctx.state, ctx.settings.agents
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


def _check_tools(ctx: ToolContext, tools: list[str] | None) -> list[str]:
    """The tools asked for, once each: known ones the creator has itself."""
    wanted = list(dict.fromkeys(tools or []))
    unknown = ctx.tools.unknown(wanted)
    if unknown:
        raise ToolRetry(
            f"unknown tools: {', '.join(unknown)}; available: {', '.join(ctx.tools.names())}"
        )
    mine = ctx.state.spec.tools
    not_mine = [t for t in wanted if t not in mine]
    if not_mine:
        raise ToolRetry(
            f"you can only give tools you have yourself; you lack "
            f"{', '.join(not_mine)} (yours: {', '.join(mine)})"
        )
    return wanted


def _grant(ctx: ToolContext, share: float) -> Usage:
    """The new agent's budget: ``share`` of what is left of its creator's. Carved out of
    the creator's remainder, so the caps of a whole subtree never add up to more than its
    root's."""
    me = ctx.state
    limits = limits_for(ctx.settings, me)
    left_tokens = limits.max_tokens - me.usage.total_tokens - me.granted.total_tokens
    left_cost = limits.max_cost_usd - me.usage.cost_usd - me.granted.cost_usd
    tokens = int(left_tokens * share)
    if tokens < _MIN_TOKENS:
        raise ToolRetry(
            f"that share leaves the new agent only {tokens} tokens; raise "
            "budget_share or finish the work yourself"
        )
    return Usage(completion_tokens=tokens, cost_usd=round(max(0.0, left_cost) * share, 6))


def _spec(
    ctx: ToolContext,
    name: str,
    role: str,
    purpose: str,
    wanted: list[str],
    system_prompt: str,
    model: str | None,
    grant: Usage,
) -> AgentSpec:
    """The new agent: its team (a lead starts one, a member joins its creator's), its
    tools (with the base ones), its model (its role's, else its creator's) and budget."""
    me = ctx.state.spec
    team_id = (
        f"team-{_slug(name)}-{uuid.uuid4().hex[:4]}"
        if role == "lead"
        else me.team_id
        if role == "member"
        else None
    )
    base = [t for t in ctx.settings.agents.base_tools if t in ctx.tools]
    if model is None and role not in ctx.settings.llm.models:
        model = me.model  # no model for its role: run on its creator's model
    return AgentSpec(
        name=name,
        role=role,
        parent_id=me.id,
        team_id=team_id,
        system_prompt=system_prompt,
        tools=tuple(dict.fromkeys([*wanted, *base])),
        model=model,
        budget=Budget(max_tokens=grant.completion_tokens, max_cost_usd=grant.cost_usd),
        description=purpose,
    )


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:24] or "team"


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
