"""An agent: its spec (what it is) and its state (where it is), kept in Redis."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from core.types._base import Frozen, new_id, now
from core.types.chat import ChatMessage, Usage


class Budget(Frozen):
    """Hard caps for one agent; ``None`` means the configured default."""

    max_turns: int | None = Field(None, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, ge=0)


class AgentSpec(Frozen):
    """What an agent is: written by the planner (or the demo), approved by people."""

    id: str = Field(default_factory=lambda: new_id("agt"))
    name: str
    # An open set (from config): ui, orchestrator, lead, member, judge, solo, ...
    role: str = "solo"
    parent_id: str | None = None
    team_id: str | None = None
    system_prompt: str = ""
    tools: tuple[str, ...] = ()
    model: str | None = None
    budget: Budget = Budget()
    description: str = ""


class AgentStatus(StrEnum):
    INITIALIZING = "initializing"
    READY = "ready"
    RUNNING = "running"
    WAITING = "waiting"
    # Waiting for a person's answer (ask_user); woken like WAITING.
    WAITING_HUMAN = "waiting_human"
    FINISHED = "finished"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (AgentStatus.FINISHED, AgentStatus.FAILED)

    @property
    def waiting(self) -> bool:
        return self in (AgentStatus.WAITING, AgentStatus.WAITING_HUMAN)


class EndReason(StrEnum):
    FINISHED = "finished"
    MAX_TURNS = "max_turns"
    MAX_TOKENS = "max_tokens"
    MAX_COST = "max_cost"
    WALL_CLOCK = "wall_clock"
    STALLED = "stalled"
    LLM_ERROR = "llm_error"
    QUARANTINED = "quarantined"
    CANCELLED = "cancelled"


class AgentState(BaseModel):
    """Where an agent is. Saved atomically with ``seq`` so each turn applies once."""

    spec: AgentSpec
    run_id: str
    status: AgentStatus = AgentStatus.INITIALIZING
    # Number of turns applied; the next turn to run has this sequence number.
    seq: int = 0
    thread: list[ChatMessage] = Field(default_factory=list)
    usage: Usage = Usage()
    # Budget set aside for the agents it created (carved out of its own).
    granted: Usage = Usage()
    # What its finished descendants spent, reported up with their results.
    team_usage: Usage = Usage()
    # Signatures of recent tool calls, for the stall detector.
    recent_calls: list[str] = Field(default_factory=list)
    # The last call's prompt: (tokens the provider counted, characters sent), to estimate
    # the next prompt's tokens before calling (the token caps are checked before a call).
    prompt_sample: tuple[int, int] | None = None
    # Depth in the agent tree (the root is 0) and the ids of the agents it created.
    depth: int = 0
    children: list[str] = Field(default_factory=list)
    # The id of the question it asked a person and still waits on (ask_user).
    open_question: str | None = None
    # The id of its tool call waiting for a person's approval (core.agent.approvals).
    open_approval: str | None = None
    result: str | None = None
    end_reason: EndReason | None = None
    end_detail: str = ""
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
