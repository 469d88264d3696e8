"""The real model path: litellm (any provider or a local OpenAI-compatible server).

Retries transient failures (rate limits, 5xx, timeouts, dropped connections) with
exponential backoff and jitter, capped, or after what the server's ``Retry-After`` asks when
that is at most ``llm.retry_after_max_s`` (longer ends the call at once, saying so). A 200
that is not a completion (an HTML page, a body that is not JSON, no choices) is reported as
such and retried only when that can help (see :mod:`core.llm.failures`). A setup error (no
key, a refused key, an unknown model, no server) is not retried, a refused connection once,
and is raised as one line saying what to do (:class:`core.errors.LLMSetupError`). Accounts
tokens and cost per call (:mod:`core.llm.pricing`: ``[llm.prices]``, then litellm's price,
then the shipped table; else $0). A streamed answer (``LLMRequest.stream``) is put together
by litellm's ``stream_chunk_builder``. litellm is imported lazily: it costs seconds and ~200 MB.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from core.config import LLMSettings
from core.errors import LLMSetupError
from core.llm.base import LLMRequest, LLMResponse
from core.llm.failures import CallFailure, classify, no_choices
from core.llm.policy import chat_body, with_retries
from core.llm.pricing import cost_usd
from core.llm.setup import call_error, missing_key
from core.types.chat import ToolCall, Usage

log = logging.getLogger(__name__)
_PLACEHOLDER = "no-key-needed"


def import_litellm() -> Any:
    """Import litellm offline-safe: use the bundled price map, never fetch it."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMGateway:
    """:class:`core.llm.base.LLM` over ``litellm.acompletion``."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self._litellm = import_litellm()
        self._api_key = settings.api_key() or self._local_placeholder_key()
        self._unpriced: set[str] = set()
        self._key_problems: dict[str, LLMSetupError | None] = {}

    def _local_placeholder_key(self) -> str | None:
        """A local OpenAI-compatible server needs no key, but the client insists on one."""
        if not self.settings.api_base:
            return None
        try:
            report = self._litellm.validate_environment(model=self.settings.model)
        except Exception:
            return None
        return None if report.get("keys_in_environment") else _PLACEHOLDER

    def _missing_key(self, model: str) -> LLMSetupError | None:
        """No key for ``model`` in the environment: said before any call, never retried."""
        if model not in self._key_problems:
            self._key_problems[model] = missing_key(self.settings, model, self._litellm)
        return self._key_problems[model]

    async def complete(self, request: LLMRequest) -> LLMResponse:
        s = self.settings
        problem = self._missing_key(request.model)
        if problem is not None:
            raise problem
        kwargs = chat_body(request, s)
        kwargs["timeout"] = s.timeout_s
        kwargs["num_retries"] = 0  # core.llm.policy owns retries
        if s.api_base:
            kwargs["api_base"] = s.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        try:
            response, attempts = await with_retries(s, lambda: self._attempt(kwargs))
        except CallFailure as failure:
            raise call_error(
                s,
                request.model,
                failure,
                failure.attempts,
                keyed=self._api_key != _PLACEHOLDER,
                litellm=self._litellm,
            ) from (failure.__cause__ or failure)
        return self._parse(request.model, response, attempts)

    async def _attempt(self, kwargs: dict[str, Any]) -> Any:
        s = self.settings
        try:
            # litellm's own timeout covers the HTTP call; this one is the backstop.
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel.
            async with asyncio.timeout(s.timeout_s + 5):
                response = await self._litellm.acompletion(**kwargs)
                if kwargs.get("stream"):
                    chunks = [chunk async for chunk in response]
                    response = self._litellm.stream_chunk_builder(
                        chunks, messages=kwargs["messages"]
                    )
        except Exception as exc:
            raise classify(exc, self._litellm, s.retry_after_max_s) from exc
        empty = no_choices(response)
        if empty is not None:
            raise empty
        return response

    def _parse(self, model: str, response: Any, attempts: int) -> LLMResponse:
        choice = response.choices[0].message
        calls = tuple(
            ToolCall(
                id=c.id or f"call_{i}",
                name=c.function.name or "",
                arguments=c.function.arguments or "{}",
            )
            for i, c in enumerate(choice.tool_calls or ())
        )
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        return LLMResponse(
            model=model,
            content=choice.content,
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                cost_usd=self._cost(model, response, prompt, completion),
            ),
            attempts=attempts,
        )

    def _cost(self, model: str, response: Any, prompt: int, completion: int) -> float:
        return cost_usd(
            self.settings, model, prompt, completion, lambda: self._litellm_cost(model, response)
        )

    def _litellm_cost(self, model: str, response: Any) -> float | None:
        """litellm's own price for the answer; None (and never asked again) when it has none."""
        if model in self._unpriced:
            return None
        # litellm has priced the answer already (its response metadata): pricing it again
        # costs a millisecond or more per call.
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict):
            known = hidden.get("response_cost")
        else:
            known = getattr(hidden, "response_cost", None)
        if isinstance(known, int | float) and known > 0:
            return float(known)
        try:
            return float(self._litellm.completion_cost(completion_response=response, model=model))
        except Exception:
            # Registered at zero so litellm's own logging stops trying to price it.
            self._litellm.register_model(
                {
                    model: {
                        "input_cost_per_token": 0.0,
                        "output_cost_per_token": 0.0,
                        "litellm_provider": model.split("/", 1)[0] if "/" in model else "openai",
                        "mode": "chat",
                    }
                }
            )
            self._unpriced.add(model)
            return None

    async def aclose(self) -> None:
        close = getattr(self._litellm, "close_litellm_async_clients", None)
        if close is not None:
            try:
                await close()
            except Exception:  # best effort on shutdown
                log.debug("closing litellm clients failed", exc_info=True)
