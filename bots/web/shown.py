"""What a run's page narrows to: one agent (``?agent=``), one kind of step (``?kind=``),
read from the query string; unknown values show everything."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# The kinds of steps people filter on, as the form shows them, and the events in each.
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "messages": ("messages", ("message_sent", "chat_posted", "notified")),
    "tools": ("tool calls", ("tool_called",)),
    "model": ("model calls", ("llm_called",)),
    "people": (
        "questions, approvals, forms",
        (
            "question_asked",
            "question_closed",
            "form_asked",
            "form_closed",
            "approval_asked",
            "approval_decided",
            "budget_reached",
            "run_status",
        ),
    ),
    "agents": (
        "agents and the run",
        ("run_started", "agent_created", "agent_finished", "run_finished"),
    ),
    "errors": ("errors", ("error",)),
}
_CATEGORY = {kind: name for name, (_label, kinds) in KINDS.items() for kind in kinds}


def category(kind: str) -> str:
    """The filter kind an event kind belongs to ("" for none)."""
    return _CATEGORY.get(kind, "")


@dataclass(frozen=True)
class Shown:
    agent: str = ""
    kind: str = ""

    @classmethod
    def of(cls, query: Mapping[str, str], agents: Mapping[str, str]) -> Shown:
        """From the query string; an agent not of this run (``agents``: id → name) or an
        unknown kind is ignored."""
        agent = query.get("agent", "")
        kind = query.get("kind", "")
        return cls(agent if agent in agents else "", kind if kind in KINDS else "")

    @property
    def kinds(self) -> dict[str, str]:
        """The kinds to choose from: key → what the form says."""
        return {key: label for key, (label, _kinds) in KINDS.items()}

    @property
    def narrowed(self) -> bool:
        return bool(self.agent or self.kind)

    def keeps(self, kind: str, agents: tuple[str, ...]) -> bool:
        """Whether a timeline row of event ``kind`` about ``agents`` is shown."""
        if self.kind and category(kind) != self.kind:
            return False
        return not self.agent or self.agent in agents

    def keeps_agent(self, agent_id: str) -> bool:
        return not self.agent or agent_id == self.agent
