"""What every model client shares, whatever carries the call (litellm or our own aiohttp
client): the chat-completions body a request becomes, and the retry policy — backoff
with jitter, or the server's Retry-After, per :class:`~core.llm.failures.CallFailure`.
Pure: no I/O; may call ``core.llm.base``, ``core.llm.failures``, ``core.llm.vision`` and
``core.config``."""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from core.config import LLMSettings
from core.llm.base import LLMRequest
from core.llm.failures import CallFailure
from core.llm.vision import wire_messages

T = TypeVar("T")


def chat_body(request: LLMRequest, s: LLMSettings, *, shared_tools: bool = False) -> dict[str, Any]:
    """The OpenAI chat-completions fields of ``request`` (the model name as given). The
    tools' schemas are shared by every request (``Tool.openai_schema``): they are copied
    unless ``shared_tools`` says the caller only serialises them (litellm may change them)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": wire_messages(request.messages, request.model),
        "max_tokens": request.max_tokens or s.max_output_tokens,
        "temperature": s.temperature,
    }
    if request.tools:
        body["tools"] = list(request.tools) if shared_tools else copy.deepcopy(list(request.tools))
    if request.response_format is not None:
        body["response_format"] = request.response_format
    if request.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}  # usage in the last chunk
    return body


async def with_retries(s: LLMSettings, attempt: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """``attempt()``'s result and how many attempts it took: up to ``llm.max_attempts``; a
    failure says whether it is retried, how often at most and, with a Retry-After already
    within ``retry_after_max_s``, how long to wait (else backoff with full jitter, as
    tenacity's ``wait_random_exponential``). The last failure is raised with ``attempts`` set.
    """
    made = 0
    while True:
        made += 1
        try:
            return await attempt(), made
        except CallFailure as failure:
            failure.attempts = made
            cap = min(s.max_attempts, failure.max_attempts or s.max_attempts)
            if not failure.retry or made >= cap:
                raise
            await asyncio.sleep(failure.wait_s if failure.wait_s is not None else backoff(s, made))


def backoff(s: LLMSettings, made: int) -> float:
    """Seconds before attempt ``made + 1``: uniform up to ``initial · 2^(made-1)``, capped."""
    high = min(s.backoff_max_s, s.backoff_initial_s * 2 ** (made - 1))
    return random.uniform(0, max(0.0, high))
