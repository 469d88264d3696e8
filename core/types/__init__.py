"""Core types (pydantic v2). Platform payloads never reach these; adapters translate."""

from core.types.agent import AgentSpec, AgentState, AgentStatus, Budget, EndReason
from core.types.chat import ChatMessage, ToolCall, Usage
from core.types.cohort import Cohort, PlanStep, TeamSpec
from core.types.events import RUN_EVENT, RunEvent
from core.types.intents import INTENT, Intent
from core.types.messages import BUS_MESSAGE, Message
from core.types.run import RunState, RunStatus, Transition

__all__ = [
    "BUS_MESSAGE",
    "INTENT",
    "RUN_EVENT",
    "AgentSpec",
    "AgentState",
    "AgentStatus",
    "Budget",
    "ChatMessage",
    "Cohort",
    "EndReason",
    "Intent",
    "Message",
    "PlanStep",
    "RunEvent",
    "RunState",
    "RunStatus",
    "TeamSpec",
    "ToolCall",
    "Transition",
    "Usage",
]
