"""What every model client shares, whatever carries the call (litellm or our own aiohttp
client): the chat-completions body a request becomes, and the retry policy — backoff
with jitter, or the server's Retry-After, per :class:`~core.llm.failures.CallFailure`.
Pure: no I/O; may call ``core.llm.base``, ``core.llm.failures`` and ``core.config``."""

from __future__ import annotations

from typing import Any

from tenacity import AsyncRetrying, RetryCallState, stop_after_attempt, wait_random_exponential

from core.config import LLMSettings
from core.llm.base import LLMRequest
from core.llm.failures import CallFailure


def chat_body(request: LLMRequest, s: LLMSettings) -> dict[str, Any]:
    """The OpenAI chat-completions fields of ``request`` (the model name as given)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [m.to_openai() for m in request.messages],
        "max_tokens": request.max_tokens or s.max_output_tokens,
        "temperature": s.temperature,
    }
    if request.tools:
        body["tools"] = list(request.tools)
    if request.response_format is not None:
        body["response_format"] = request.response_format
    return body


def retrying(s: LLMSettings) -> AsyncRetrying:
    """Up to ``llm.max_attempts``; a failure says whether it is retried, how often at most
    and, with a Retry-After already within ``retry_after_max_s``, how long to wait."""
    backoff = wait_random_exponential(multiplier=s.backoff_initial_s, max=s.backoff_max_s)

    def wait(state: RetryCallState) -> float:
        failure = _failure(state)
        if failure is not None and failure.wait_s is not None:
            return failure.wait_s
        return backoff(state)

    def retry(state: RetryCallState) -> bool:
        failure = _failure(state)
        if failure is None or not failure.retry:
            return False
        return failure.max_attempts is None or state.attempt_number < failure.max_attempts

    return AsyncRetrying(
        stop=stop_after_attempt(s.max_attempts), wait=wait, retry=retry, reraise=True
    )


def _failure(state: RetryCallState) -> CallFailure | None:
    exc = state.outcome.exception() if state.outcome is not None else None
    return exc if isinstance(exc, CallFailure) else None
