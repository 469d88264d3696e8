"""The direct model path for OpenAI-compatible endpoints (OpenAI, vLLM, llama.cpp, Ollama, …):
one aiohttp session per client, ``POST {base}/chat/completions`` on its connection pool
(:mod:`core.llm.http_post`: without the session's per-request machinery), no litellm.

Retries, Retry-After, setup errors and messages are the litellm gateway's
(:mod:`core.llm.gateway`), classified from HTTP statuses in :mod:`core.llm.http_failures`.
A missing key is said before any call (:func:`core.llm.setup.missing_key`). A request that
asks for it is streamed (:mod:`core.llm.sse`). Cost from :mod:`core.llm.pricing`.

The request's JSON is kept from one request to the next: the messages' (an agent's thread
only grows: a request encodes only the messages its agent's last request did not have), and
the fields around them (the tools' schemas, by the model, tools and settings that make them).

Owns the HTTP call and the parsing of its answer; calls aiohttp, core.llm and core.types.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import aiohttp
from pydantic_core import to_json
from yarl import URL

from core.config import LLMSettings
from core.errors import LLMSetupError
from core.llm import http_failures, sse
from core.llm.base import LLMRequest, LLMResponse
from core.llm.failures import CallFailure
from core.llm.http_post import Poster
from core.llm.policy import chat_body, with_retries
from core.llm.pricing import price_of, shipped, warn_unpriced
from core.llm.routes import PREFIXES, base_url, wire_model
from core.llm.setup import call_error, key_variables, missing_key
from core.llm.vision import sees_images
from core.types.chat import ChatMessage, ToolCall, Usage
from core.types.grown import Grown

__all__ = ["PREFIXES", "OpenAICompatClient", "wire_model"]


class _Target:
    """Where one model's calls go: the URL, its headers (the key) and the request made of
    them (``poster``), or why it cannot be called."""

    def __init__(self, settings: LLMSettings, model: str) -> None:
        self.url = base_url(settings, model).rstrip("/") + "/chat/completions"
        keys = (os.environ.get(v) for v in key_variables(settings, model))
        self.key = next((k for k in keys if k), "")
        self.headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        self.post_headers = {**self.headers, "Content-Type": "application/json"}
        self.poster = Poster(URL(self.url), self.post_headers)
        self.problem: LLMSetupError | None = missing_key(settings, model)
        # Its price (``core.llm.pricing.cost_usd``'s lookup, made once): [llm.prices],
        # then the shipped table; None: unpriced, its calls count $0.
        self.price = price_of(settings.prices, model) or price_of(shipped(), model)


class OpenAICompatClient:
    """:class:`core.llm.base.LLM` over an OpenAI-compatible chat-completions endpoint."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self._session: aiohttp.ClientSession | None = None
        self._targets: dict[str, _Target] = {}
        # _frame's: (the objects of its key, kept; the JSON before and after the messages).
        self._frames: dict[tuple[Any, ...], tuple[object, tuple[bytes, bytes]]] = {}

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # aiohttp's default pool (100 connections) would cap a worker's turns in flight
            # at 100 model calls: the rest wait for a connection (llm.max_connections).
            connector = aiohttp.TCPConnector(limit=self.settings.max_connections)
            # No timeout of aiohttp's (it would time each request and each read a second
            # time): ``_attempt`` times the whole exchange.
            self._session = aiohttp.ClientSession(connector=connector, timeout=_NO_TIMEOUT)
        return self._session

    def target(self, model: str) -> _Target:
        found = self._targets.get(model)
        if found is None:
            found = self._targets[model] = _Target(self.settings, model)
        return found

    def _payload(self, request: LLMRequest) -> dict[str, Any]:
        return {
            **chat_body(request, self.settings, shared_tools=True),
            "model": wire_model(request.model),
        }

    def _body(self, request: LLMRequest) -> bytes:
        """``to_json(self._payload(request))`` (in pydantic-core's JSON: a quarter of the
        stdlib's CPU): the fields around the messages kept from the last request like it
        (``_frame``), the messages' part made anew only for those the agent's last request
        did not have (``messages_json``)."""
        messages = request.messages
        if any(m.images for m in messages) and sees_images(request.model):
            return to_json(self._payload(request))  # images: shown after tool results
        head, tail = self._frame(request)
        return b'%s,"messages":[%s]%s' % (head, messages_json(messages), tail)

    def _frame(self, request: LLMRequest) -> tuple[bytes, bytes]:
        """The request's JSON before and after its messages, kept by what makes it: the
        model, the token cap, streaming and its tools' ``function`` parts by identity
        (``Tool.openai_schema``: built once, never changed; a request's validation copies
        each tool's outer dict, not that part), kept with it so that their ids are not
        others' later. Encoding the tools was most of a short request's JSON. A request
        with a response format, or tools of another shape, is encoded anew."""
        tools = request.tools
        functions = tuple(t.get("function") for t in tools)
        key = None
        if request.response_format is None and all(
            len(t) == 2 and t.get("type") == "function" for t in tools
        ):
            key = (request.model, request.max_tokens, request.stream, *map(id, functions))
            kept = self._frames.get(key)
            if kept is not None:
                return kept[1]
        rest = to_json(self._payload(request.model_copy(update={"messages": ()})))
        # '{"model":"…","messages":[],…}': the model comes first, a JSON string (a '"'
        # in it is escaped), so the first ',"messages":[]' is the field's.
        head, tail = rest.split(_NO_MESSAGES, 1)
        if key is not None:
            if len(self._frames) >= _FRAMES:
                self._frames.clear()
            self._frames[key] = (functions, (head, tail))
        return head, tail

    async def _attempt(self, target: _Target, sent: bytes) -> dict[str, Any]:
        # The one timeout of the whole exchange (connecting, sending, the answer and its
        # body or stream): the session has none of its own (``_client``).
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                async with target.poster.post(self._client(), sent) as answer:
                    if answer.status < 400 and answer.content_type == "text/event-stream":
                        return await sse.read(answer.content.iter_any())
                    raw = await answer.read()
                    status, headers = answer.status, answer.headers
        except Exception as exc:
            raise http_failures.from_exception(exc) from exc
        if status >= 400:
            text = http_failures.as_text(raw)
            raise http_failures.from_status(status, text, headers, self.settings.retry_after_max_s)
        body = http_failures.from_body(raw)
        if isinstance(body, CallFailure):
            raise body
        return body

    async def complete(self, request: LLMRequest) -> LLMResponse:
        target = self.target(request.model)
        if target.problem is not None:
            raise target.problem
        sent = self._body(request)
        try:
            body, attempts = await with_retries(self.settings, lambda: self._attempt(target, sent))
        except CallFailure as failure:
            raise call_error(
                self.settings, request.model, failure, failure.attempts, keyed=bool(target.key)
            ) from (failure.__cause__ or failure)
        return self._parse(request.model, body, attempts)

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
        price = self.target(model).price
        if price is None:
            warn_unpriced(model)
            cost = 0.0
        else:  # the arithmetic of core.llm.pricing.cost_usd
            cost = (prompt * price.input_per_mtok + completion * price.output_per_mtok) / 1e6
        return LLMResponse(
            model=model,
            content=message.get("content"),
            tool_calls=calls,
            usage=Usage(prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost),
            attempts=attempts,
        )

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


_NO_MESSAGES = b',"messages":[]'
_NO_TIMEOUT = aiohttp.ClientTimeout()
# Frames a client keeps (all forgotten when full): a process's models × tool sets.
_FRAMES = 256
# The wire JSON of the messages of requests this client sent (all but the last, joined by
# commas), by the first message's identity: an agent's thread only grows, so its next
# request has the same messages in the same places (``core.types.grown``). The last is
# made anew each time: it may be a note for that request alone.
_SENT: Grown[bytes] = Grown()


def messages_json(messages: tuple[ChatMessage, ...]) -> bytes:
    """The messages' wire shapes (``ChatMessage.to_openai``) in JSON, joined by commas
    (no brackets); with no images to show (``core.llm.vision.wire_messages``)."""
    first = messages[0] if messages else None
    n = len(messages) - 1
    seen = _SENT.since(first, messages, n)
    done, body = seen if seen is not None else (0, b"")
    if n > done:
        more = to_json([m.to_openai() for m in messages[done:n]])[1:-1]
        body = body + b"," + more if body else more
    if n > 0:
        _SENT.keep(first, messages[:n], body)
    if n < 0:
        return b""
    last = to_json(messages[n].to_openai())
    return body + b"," + last if body else last
