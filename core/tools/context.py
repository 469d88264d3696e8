"""What a tool gets besides its arguments: the run, the agent, and injected services."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.types.agent import AgentState
from core.types.intents import Intent

if TYPE_CHECKING:
    from core.bus import Outgoing
    from core.runtime import Services


@dataclass
class ToolContext:
    """Passed as the first parameter to every tool; never a global.

    ``intents`` collects side effects to process once, after the turn is saved.
    """

    services: Services
    state: AgentState
    intents: list[Intent] = field(default_factory=list)
    # Messages to send, written in the turn's save transaction.
    outbox: list[Outgoing] = field(default_factory=list)
    # Agents created this turn, saved with it; their first turns start after the save.
    spawned: list[AgentState] = field(default_factory=list)
    # Set by ``wait_for_messages``: end the turn and sleep until a message arrives.
    wait: bool = False
    # Set by ``ask_user``: a question for a person; the agent waits for the answer.
    question: str | None = None
    # Set by the ``finish`` tool: the agent's final result.
    finish_result: str | None = None

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def agent_id(self) -> str:
        return self.state.spec.id

    @property
    def seq(self) -> int:
        return self.state.seq
