"""Who may message whom. Enforced by the bus, not by prompts.

An agent may message its parent, its children and its own team (each member, or the team
topic); only the root (the orchestrator) may broadcast. Leads reach another team only
through their parent.

Pure rules, no Redis: part of the state room (``core.state``) because the bus enforces
them; may call ``core.types`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.types.agent import AgentSpec

RouteKind = Literal["agent", "team", "all"]


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    # The agent id, the team id, or "all".
    target: str


class RouteRefused(Exception):
    """The message may not go where the sender asked; ``allowed`` says where it may."""

    def __init__(self, reason: str, allowed: str) -> None:
        self.reason = reason
        self.allowed = allowed
        super().__init__(f"{reason} You may address: {allowed}.")


def allowed_targets(sender: AgentSpec) -> str:
    parts = []
    if sender.parent_id:
        parts.append('"parent"')
    parts.append("your children (by name or id)")
    if sender.team_id:
        parts += ["members of your team (by name or id)", '"team"']
    if sender.parent_id is None:
        parts.append('"all"')
    return ", ".join(parts)


def route_keyword(sender: AgentSpec, to: str) -> Route | None:
    """Resolve ``parent`` / ``team`` / ``all``; None when ``to`` names an agent."""
    word = to.strip().lower()
    if word == "parent":
        if not sender.parent_id:
            raise RouteRefused(
                "You have no parent: you are the top of the hierarchy.", allowed_targets(sender)
            )
        return Route("agent", sender.parent_id)
    if word == "team":
        if not sender.team_id:
            raise RouteRefused("You are not on a team.", allowed_targets(sender))
        return Route("team", sender.team_id)
    if word in ("all", "broadcast", "everyone"):
        if sender.parent_id is not None:
            raise RouteRefused(
                "Only the orchestrator may broadcast to everyone.", allowed_targets(sender)
            )
        return Route("all", "all")
    return None


def check_direct(sender: AgentSpec, recipient: AgentSpec) -> Route:
    """A direct message is allowed to the parent, a child, or a member of one's own team."""
    if recipient.id == sender.id:
        raise RouteRefused("You cannot message yourself.", allowed_targets(sender))
    if (
        recipient.id == sender.parent_id
        or recipient.parent_id == sender.id
        or (sender.team_id is not None and recipient.team_id == sender.team_id)
    ):
        return Route("agent", recipient.id)
    via = "your parent" if sender.parent_id else "the lead of their team"
    raise RouteRefused(
        f"{recipient.name} is not your parent, your child or on your team"
        f" (their team: {recipient.team_id or 'none'}); reach them through {via}.",
        allowed_targets(sender),
    )
