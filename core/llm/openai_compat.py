"""The direct model path for OpenAI-compatible endpoints (OpenAI, vLLM, llama.cpp, Ollama, …):
one aiohttp session per client, ``POST {api_base}/chat/completions``, no litellm.

Retries, Retry-After, setup errors and messages are the litellm gateway's
(:mod:`core.llm.gateway`), classified from HTTP statuses in :mod:`core.llm.http_failures`.
Cost comes from ``[llm.prices]`` (:mod:`core.llm.pricing`); a model with no price there counts
$0 (litellm's price table is not imported). No streaming yet.

Owns the HTTP call and the parsing of its answer; calls aiohttp, tenacity and core.llm.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import aiohttp

from core.config import LLMSettings
from core.errors import LLMError
from core.llm import http_failures
from core.llm.base import LLMRequest, LLMResponse
from core.llm.failures import CallFailure
from core.llm.policy import chat_body, retrying
from core.llm.pricing import configured_cost
from core.llm.setup import setup_error
from core.types.chat import ToolCall, Usage

log = logging.getLogger(__name__)
DEFAULT_BASE = "https://api.openai.com/v1"
# Provider prefixes that name an OpenAI-compatible endpoint; stripped from the model sent.
PREFIXES = ("openai/", "hosted_vllm/")


def wire_model(model: str) -> str:
    """The model name the server knows (``openai/gpt-4o`` → ``gpt-4o``)."""
    for prefix in PREFIXES:
        if model.startswith(prefix):
            return model[len(prefix) :]
    return model


class OpenAICompatClient:
    """:class:`core.llm.base.LLM` over an OpenAI-compatible chat-completions endpoint."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self._url = (settings.api_base or DEFAULT_BASE).rstrip("/") + "/chat/completions"
        variable = settings.api_key_env or "OPENAI_API_KEY"
        self._api_key = os.environ.get(variable) or ""
        self._session: aiohttp.ClientSession | None = None
        self._unpriced: set[str] = set()

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"Content-Type": "application/json"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._session = aiohttp.ClientSession(
                headers=headers, timeout=aiohttp.ClientTimeout(total=self.settings.timeout_s)
            )
        return self._session

    def _payload(self, request: LLMRequest) -> dict[str, Any]:
        return {**chat_body(request, self.settings), "model": wire_model(request.model)}

    async def _attempt(self, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            async with asyncio.timeout(self.settings.timeout_s + 5):
                async with self._client().post(self._url, json=payload) as answer:
                    text = await answer.text()
                    status, headers = answer.status, answer.headers
        except Exception as exc:
            raise http_failures.from_exception(exc) from exc
        if status >= 400:
            raise http_failures.from_status(status, text, headers, self.settings.retry_after_max_s)
        body = http_failures.from_body(text)
        if isinstance(body, CallFailure):
            raise body
        return body

    async def complete(self, request: LLMRequest) -> LLMResponse:
        s = self.settings
        payload = self._payload(request)
        attempts = 0
        try:
            async for attempt in retrying(s):
                with attempt:
                    attempts += 1
                    body = await self._attempt(payload)
        except CallFailure as failure:
            raise self._error(request.model, failure, attempts) from (failure.__cause__ or failure)
        return self._parse(request.model, body, attempts)

    def _error(self, model: str, failure: CallFailure, attempts: int) -> LLMError:
        if failure.setup:
            return setup_error(
                self.settings,
                model,
                failure.setup,
                status=failure.status,
                attempts=attempts,
                keyed=bool(self._api_key),
                address=failure.address,
                said=failure.message if failure.status else "",
            )
        return LLMError(
            failure.message,
            model=model,
            status=failure.status,
            attempts=attempts,
            retryable=failure.transient,
        )

    def _parse(self, model: str, body: dict[str, Any], attempts: int) -> LLMResponse:
        message = body["choices"][0].get("message") or {}
        calls = tuple(
            ToolCall(
                id=c.get("id") or f"call_{i}",
                name=(c.get("function") or {}).get("name") or "",
                arguments=(c.get("function") or {}).get("arguments") or "{}",
            )
            for i, c in enumerate(message.get("tool_calls") or ())
        )
        usage = body.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        return LLMResponse(
            model=model,
            content=message.get("content"),
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                cost_usd=self._cost(model, prompt, completion),
            ),
            attempts=attempts,
        )

    def _cost(self, model: str, prompt: int, completion: int) -> float:
        priced = configured_cost(self.settings, model, prompt, completion)
        if priced is not None:
            return priced
        if model not in self._unpriced:
            self._unpriced.add(model)
            log.warning(
                "no price known for model %s: counting it at $0 "
                "(set [llm.prices] in config.toml to price it)",
                model,
            )
        return 0.0

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()
