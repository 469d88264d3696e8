"""The one interface every model implementation speaks."""

from __future__ import annotations

from typing import Any, Protocol

from core.types._base import Frozen
from core.types.chat import ChatMessage, ToolCall, Usage


class LLMRequest(Frozen):
    model: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[dict[str, Any], ...] = ()
    # The most tokens the answer may take (None: llm.max_output_tokens); the turn lowers it
    # to what is left of the agent's and the run's token budgets.
    max_tokens: int | None = None
    # Structured output, as the OpenAI API takes it ({"type": "json_object"} or
    # {"type": "json_schema", "json_schema": {...}}); None: free text. The planner asks for it
    # from models that do not call its submit tool.
    response_format: dict[str, Any] | None = None
    # Have the answer streamed (server-sent events) and put together as it comes; the
    # response is the same.
    stream: bool = False
    # For accounting and logs only.
    run_id: str = ""
    agent_id: str = ""
    agent_name: str = ""


class LLMResponse(Frozen):
    model: str
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    attempts: int = 1

    def as_message(self) -> ChatMessage:
        return ChatMessage(role="assistant", content=self.content, tool_calls=list(self.tool_calls))


class LLM(Protocol):
    """Async chat completion with tools. Raises :class:`core.errors.LLMError` on failure."""

    async def complete(self, request: LLMRequest) -> LLMResponse: ...

    async def aclose(self) -> None: ...
