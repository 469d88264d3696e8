"""Messages between agents on the bus: one typed union, discriminated by ``kind``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from core.types._base import Frozen, new_id, now


class _MessageBase(Frozen):
    id: str = Field(default_factory=lambda: new_id("msg"))
    run_id: str
    sender: str
    # An agent id, "team:<team id>", or "all".
    recipient: str
    correlation_id: str | None = None
    sent_at: float = Field(default_factory=now)


class TextMessage(_MessageBase):
    kind: Literal["text"] = "text"
    body: str


class ResultMessage(_MessageBase):
    """An agent's final result, delivered to its parent when it finishes."""

    kind: Literal["result"] = "result"
    body: str
    ok: bool = True
    # What the sender and its descendants spent: spending rolls up the tree.
    tokens: int = 0
    cost_usd: float = 0.0


class HumanReply(_MessageBase):
    """A person's answer to an agent's question (or a follow-up from chat)."""

    kind: Literal["human_reply"] = "human_reply"
    body: str
    author: str


Message = Annotated[TextMessage | ResultMessage | HumanReply, Field(discriminator="kind")]
BUS_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)
