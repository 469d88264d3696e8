"""A scripted model: plays back replies instead of calling a provider.

For unit tests and the offline demo. It goes through the same turn loop as a real model;
only the completion itself is scripted.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.errors import LLMError
from core.llm.base import LLMRequest, LLMResponse
from core.types.chat import ToolCall, Usage

SCRIPTED_MODEL = "scripted/offline"


@dataclass(frozen=True)
class Reply:
    """One scripted model reply: text and/or tool calls (args as dict or raw JSON text)."""

    content: str | None = None
    calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    prompt_tokens: int | None = None
    completion_tokens: int = 20


@dataclass(frozen=True)
class Fail:
    """A scripted provider failure (after retries)."""

    message: str = "scripted failure"
    status: int = 500


def call(name: str, args: dict[str, Any] | str | None = None) -> tuple[str, dict[str, Any] | str]:
    """Shorthand for one tool call in a :class:`Reply`."""
    return (name, {} if args is None else args)


Responder = Callable[[LLMRequest], Reply | Fail]


@dataclass
class ScriptedModel:
    """Replies from a per-agent queue, else from ``responder``, else a ``finish`` call.

    Scripts are keyed by agent name or id (``"*"`` for any agent), so multi-agent scenarios read
    naturally. Every request is recorded in ``requests``.
    """

    scripts: dict[str, deque[Reply | Fail]] = field(default_factory=dict)
    responder: Responder | None = None
    cost_per_call_usd: float = 0.0
    requests: list[LLMRequest] = field(default_factory=list)
    # Seconds each answer takes (the demos' --pace: a person can watch the agents work).
    pace_s: float = 0.0

    def script(self, agent: str, *replies: Reply | Fail) -> ScriptedModel:
        self.scripts.setdefault(agent, deque()).extend(replies)
        return self

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if self.pace_s > 0:
            await asyncio.sleep(self.pace_s)
        queue = next(
            (
                self.scripts[k]
                for k in (request.agent_name, request.agent_id, "*")
                if self.scripts.get(k)
            ),
            None,
        )
        if queue:
            item = queue.popleft()
        elif self.responder is not None:
            item = self.responder(request)
        else:
            item = Reply(calls=(call("finish", {"result": "(scripted model: script ended)"}),))
        if isinstance(item, Fail):
            raise LLMError(item.message, model=SCRIPTED_MODEL, status=item.status)
        prompt_tokens = item.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = max(1, sum(len(m.content or "") for m in request.messages) // 4)
        return LLMResponse(
            model=SCRIPTED_MODEL,
            content=item.content,
            tool_calls=tuple(
                ToolCall(
                    id=f"call_{uuid.uuid4().hex[:12]}",
                    name=n,
                    arguments=a if isinstance(a, str) else json.dumps(a, ensure_ascii=False),
                )
                for n, a in item.calls
            ),
            usage=Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=item.completion_tokens,
                cost_usd=self.cost_per_call_usd,
            ),
        )

    async def aclose(self) -> None:
        return None
