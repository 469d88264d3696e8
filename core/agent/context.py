"""What a tool gets besides its arguments: its agent and run, the parts of the services
a tool may use, and the turn's staging area for the tool's effects.

A tool acts only through this context: messages, new agents, intents (side effects),
a question, a wait or the final result are staged here and written in the turn's save
transaction, so a turn delivered twice never applies them twice. The Redis client, the
scheduler and the model are not exposed: a tool that needs Redis goes through the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.config import Settings
from core.prompts import PromptLibrary
from core.services import Services
from core.state.bus import Bus, Outgoing
from core.state.store import Store
from core.types.agent import AgentState
from core.types.intents import Intent
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.tools.registry import ToolRegistry


class ToolContext:
    """Passed as the first parameter to every tool; never a global."""

    def __init__(self, services: Services, state: AgentState) -> None:
        self._services = services
        self.state = state
        # Side effects to carry out once, after the turn is saved (post, notify, remind).
        self.intents: list[Intent] = []
        # Messages to send, written in the turn's save transaction.
        self.outbox: list[Outgoing] = []
        # Agents created this turn, saved with it; their first turns start after the save.
        self.spawned: list[AgentState] = []
        # Set by ``wait_for_messages``: end the turn and sleep until a message arrives.
        self.wait = False
        # Set by ``wait_for_messages(all_children=True)``: the children whose results it
        # waits for (one ending wakes it only once none of them is still at work).
        self.wait_for: list[str] = []
        # Set by ``ask_user``: a question for a person; the agent waits for the answer.
        self.question: str | None = None
        # Set by the ``finish`` tool: the agent's final result.
        self.finish_result: str | None = None
        # Images tools returned this turn (file path, data URL): they join the thread with
        # the results, for a model that sees images (``core.tools.mcp.results``).
        self.images: list[tuple[str, str]] = []

    @property
    def settings(self) -> Settings:
        return self._services.settings

    @property
    def store(self) -> Store:
        return self._services.store

    @property
    def bus(self) -> Bus:
        return self._services.bus

    @property
    def prompts(self) -> PromptLibrary:
        return self._services.prompts

    @property
    def workspace(self) -> Workspace:
        """The runs' files; pass :attr:`run_id` to every call."""
        return self._services.workspace

    @property
    def tools(self) -> ToolRegistry:
        """Every registered tool (this agent may use only its spec's)."""
        return self._services.tools

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def agent_id(self) -> str:
        return self.state.spec.id

    @property
    def seq(self) -> int:
        return self.state.seq
