"""The conversation an agent has with its model (OpenAI-style, provider-neutral)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from core.types._base import Frozen


class ToolCall(Frozen):
    """A tool call as the model asked for it; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str = "{}"


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # Images a tool returned with this result (data URLs), shown to a model that sees
    # images after the results (``core.llm.vision``); left out of the JSON when none.
    images: tuple[str, ...] = Field(default=(), exclude_if=lambda v: not v)

    def to_openai(self) -> dict[str, Any]:
        """The wire shape litellm and OpenAI-compatible servers take."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        return out


class Usage(Frozen):
    """Tokens and cost of one or more LLM calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )
