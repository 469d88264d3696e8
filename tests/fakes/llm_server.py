"""A local, OpenAI-compatible fake LLM server for tests.

It speaks the real wire format of ``POST /v1/chat/completions`` (with ``stream: true``, a
:class:`FakeReply` comes as server-sent chunks, usage last with ``stream_options``),
``POST /v1/embeddings`` (deterministic word-hash vectors of ``embedding_dim`` floats, as
JSON lists or base64), ``POST /v1/images/generations`` (a tiny PNG, as ``b64_json`` or, with
``image_format = "url"``, as a URL this server serves) and ``GET /v1/models``, so code under
test can go through the genuine litellm/openai client stack with
``api_base=server.base_url``.

Responses come from, in order of precedence:

1. a FIFO queue filled with :meth:`FakeLLMServer.script` (a :class:`FakeReply`, a
   :class:`FakeFailure`, or a :class:`FakeRaw` answer that is not a completion),
2. a responder callable set with :meth:`FakeLLMServer.set_responder`,
3. the default reply: content ``"ok"`` and no tool calls.

Two flavours are provided:

* :class:`FakeLLMServer` runs on the caller's event loop (``async with FakeLLMServer() as s``).
* :class:`ThreadedFakeLLMServer` runs on its own loop in a background thread, for synchronous
  code and for tests that drive other processes (``with ThreadedFakeLLMServer() as s``).

Run standalone with ``python -m tests.fakes.llm_server --port 8999 --latency-ms 200``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import socket
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web

try:  # C; a transitive dependency (pinecone). The request's parsing was a third of this
    # server's CPU per chat call in bench/throughput.py, where it shares the workers' cores.
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover
    _fast_loads = None  # type: ignore[assignment]

__all__ = [
    "FakeFailure",
    "FakeItem",
    "FakeLLMServer",
    "FakeRaw",
    "FakeReply",
    "Responder",
    "ThreadedFakeLLMServer",
]

DEFAULT_MODELS: tuple[str, ...] = ("fake-model",)


@dataclass
class FakeReply:
    """A successful chat completion to return.

    ``tool_calls`` holds ``(name, arguments)`` pairs; a dict is JSON-encoded, a string is sent
    verbatim (so malformed JSON can be injected). Token counts default to a rough estimate.
    """

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class FakeFailure:
    """An HTTP error to return, in the OpenAI error shape.

    ``retry_after`` sets the ``Retry-After`` header (seconds; a string is sent verbatim, e.g.
    an HTTP date); ``retry_after_ms`` sets ``retry-after-ms`` (OpenAI's own); ``delay_s`` sleeps
    before answering (on top of the server latency), e.g. to provoke client timeouts.
    """

    status: int
    message: str = "injected failure"
    retry_after: float | str | None = None
    delay_s: float = 0.0
    retry_after_ms: float | None = None


@dataclass
class FakeRaw:
    """An answer sent exactly as given: for what is not a completion nor an OpenAI error.

    Use the constructors: :meth:`html` (a proxy's login or error page), :meth:`not_json`,
    :meth:`no_choices` (a well-formed completion whose ``choices`` list is empty).
    """

    body: str = ""
    status: int = 200
    content_type: str = "text/plain"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    @classmethod
    def html(cls, title: str = "Sign in", status: int = 200) -> FakeRaw:
        page = (
            f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n<body>"
            f"<h1>{title}</h1><form action='/login' method='post'><input name='user'>"
            "<input name='password' type='password'></form></body></html>\n"
        )
        return cls(page, status, "text/html")

    @classmethod
    def not_json(
        cls, text: str = "upstream said: ok {", content_type: str = "application/json"
    ) -> FakeRaw:
        return cls(text, 200, content_type)

    @classmethod
    def sse(cls, *events: str) -> FakeRaw:
        """A stream of server-sent events, each ``data: <event>`` (e.g. a malformed one)."""
        return cls("".join(f"data: {e}\n\n" for e in events), 200, "text/event-stream")

    @classmethod
    def no_choices(cls, model: str = "fake-model") -> FakeRaw:
        body = {
            "id": f"chatcmpl-{_hex24()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1},
        }
        return cls(json.dumps(body), 200, "application/json")


FakeItem = FakeReply | FakeFailure | FakeRaw
Responder = Callable[[dict[str, Any]], FakeItem]

_ERROR_TYPES: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "model_not_found"),
    408: ("timeout_error", "timeout"),
    409: ("conflict_error", "conflict"),
    422: ("invalid_request_error", "unprocessable_entity"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def _error_body(status: int, message: str) -> dict[str, Any]:
    """Build an OpenAI-style error payload for ``status``."""
    if status in _ERROR_TYPES:
        err_type, code = _ERROR_TYPES[status]
    elif status >= 500:
        err_type, code = "server_error", "server_error"
    else:
        err_type, code = "invalid_request_error", "error"
    return {"error": {"message": message, "type": err_type, "code": code, "param": None}}


def _hex24() -> str:
    """24 random hex digits, as ``uuid.uuid4().hex[:24]`` spelled them (cheaper)."""
    return os.urandom(12).hex()


async def _read_json(request: web.Request) -> Any:
    """The request's JSON body, as ``await request.json()`` parses it (``ValueError`` when
    it is not JSON): orjson first, and the standard library whenever orjson refuses (a
    body it rejects, e.g. ``NaN``, another charset), so what is accepted is unchanged."""
    raw = await request.read()
    charset = request.charset
    if _fast_loads is not None and charset in (None, "utf-8", "UTF-8"):
        try:
            return _fast_loads(raw)
        except ValueError:
            pass
    return json.loads(raw.decode(charset or "utf-8"))


def _estimate_tokens(text: str) -> int:
    """Rough token count: ``len(text) // 4``, at least 1."""
    return max(1, len(text) // 4)


def _request_text(body: dict[str, Any]) -> str:
    """Concatenate the textual parts of a chat request (contents and tool-call arguments)."""
    parts: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(
                p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        for call in message.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                parts.append(str(fn.get("name", "")))
                parts.append(str(fn.get("arguments", "")))
    return "\n".join(parts)


def _completion_body(reply: FakeReply, model: str, request: dict[str, Any]) -> dict[str, Any]:
    """Render ``reply`` as an OpenAI ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    completion_text = reply.content or ""
    if reply.tool_calls:
        calls = []
        for name, args in reply.tool_calls:
            arguments = args if isinstance(args, str) else json.dumps(args)
            completion_text += name + arguments
            calls.append(
                {
                    "id": f"call_{_hex24()}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            )
        message["tool_calls"] = calls
    prompt_tokens = reply.prompt_tokens
    if prompt_tokens is None:
        prompt_tokens = _estimate_tokens(_request_text(request))
    completion_tokens = reply.completion_tokens
    if completion_tokens is None:
        completion_tokens = _estimate_tokens(completion_text)
    return {
        "id": f"chatcmpl-{_hex24()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _pieces(text: str, n: int = 3) -> list[str]:
    """``text`` cut into at most ``n`` pieces, as a streaming server sends it."""
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _chunks(done: dict[str, Any], request: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` events a streaming server sends for ``done``."""
    head = {k: done[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = done["choices"][0]

    def delta(part: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return head | {"choices": [{"index": 0, "delta": part, "finish_reason": finish}]}

    chunks = [delta({"role": "assistant", "content": ""})]
    chunks += [delta({"content": piece}) for piece in _pieces(choice["message"]["content"] or "")]
    for i, call in enumerate(choice["message"].get("tool_calls") or ()):
        opening = {"index": i, "id": call["id"], "type": "function"}
        opening["function"] = {"name": call["function"]["name"], "arguments": ""}
        chunks.append(delta({"tool_calls": [opening]}))
        for piece in _pieces(call["function"]["arguments"]):
            chunks.append(delta({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    chunks.append(delta({}, choice["finish_reason"]))
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append(head | {"choices": [], "usage": done["usage"]})
    return chunks


async def _stream(request: web.Request, chunks: list[dict[str, Any]]) -> web.StreamResponse:
    answer = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await answer.prepare(request)
    for chunk in chunks:
        await answer.write(f"data: {json.dumps(chunk)}\n\n".encode())
    await answer.write(b"data: [DONE]\n\n")
    await answer.write_eof()
    return answer


def fake_embedding(text: str, dim: int) -> list[float]:
    """A deterministic unit vector: each lower-cased word adds ±1 to a hashed bucket."""
    vector = [0.0] * dim
    for word in text.lower().split():
        value = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        vector[value % dim] += 1.0 if value >> 63 else -1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


def _embeddings_body(body: dict[str, Any], dim: int) -> dict[str, Any]:
    """Render an OpenAI ``list`` of embeddings for the request's ``input``."""
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    data = []
    for i, text in enumerate(texts):
        vector = fake_embedding(str(text), dim)
        embedding: list[float] | str = vector
        if body.get("encoding_format") == "base64":
            embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
        data.append({"object": "embedding", "index": i, "embedding": embedding})
    tokens = sum(_estimate_tokens(str(t)) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": str(body.get("model") or "fake-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def tiny_png(rgb: tuple[int, int, int] = (255, 128, 0)) -> bytes:
    """A valid 1×1 PNG of one colour: what the fake images endpoint returns."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" + bytes(rgb))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON response whose Content-Type is exactly ``application/json`` (no charset)."""
    return web.Response(
        body=json.dumps(payload).encode(),
        status=status,
        headers=headers,
        content_type="application/json",
    )


def _json_error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return _json(_error_body(status, message), status, headers)


class FakeLLMServer:
    """OpenAI-compatible fake chat-completions server running on the current event loop.

    ``requests`` records every parsed request body in arrival order (failed ones included), and
    ``request_times`` the ``time.monotonic()`` of each one's arrival.
    ``latency_s`` is mutable and applied to every chat request before answering.
    Queue, responder and request log are guarded by a lock, so they may be used from another
    thread (see :class:`ThreadedFakeLLMServer`).
    """

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Sequence[str] = DEFAULT_MODELS,
        embedding_dim: int = 64,
    ) -> None:
        self.latency_s = latency_s
        self.embedding_dim = embedding_dim
        # How /v1/images/generations answers: "b64_json" (the PNG inline) or "url".
        self.image_format = "b64_json"
        self.host = host
        self.models: list[str] = list(models)
        self.requests: list[dict[str, Any]] = []
        self.request_times: list[float] = []
        self._requested_port = port
        self._port: int | None = None
        self._queue: deque[FakeItem] = deque()
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._runner: web.AppRunner | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and start serving; ``port=0`` picks a free port."""
        if self._runner is not None:
            raise RuntimeError("FakeLLMServer already started")
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle_chat)
        app.router.add_post("/v1/embeddings", self._handle_embeddings)
        app.router.add_get("/v1/models", self._handle_models)
        app.router.add_post("/v1/images/generations", self._handle_images)
        app.router.add_get("/v1/images/files/{name}", self._handle_image_file)
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._requested_port))
            site = web.SockSite(runner, sock)
            await site.start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        self._port = sock.getsockname()[1]
        self._runner = runner

    async def stop(self) -> None:
        """Stop serving and release the port (idempotent)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- configuration -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (only valid after :meth:`start`)."""
        if self._port is None:
            raise RuntimeError("FakeLLMServer not started")
        return self._port

    @property
    def base_url(self) -> str:
        """Base URL including ``/v1``, suitable for litellm's ``api_base``."""
        return f"http://{self.host}:{self.port}/v1"

    def script(self, *items: FakeItem) -> None:
        """Append replies/failures to the FIFO queue; each request consumes one item."""
        with self._lock:
            self._queue.extend(items)

    def set_responder(self, fn: Responder | None) -> None:
        """Set (or clear) the callable used when the queue is empty; it gets the request JSON."""
        with self._lock:
            self._responder = fn

    @property
    def pending(self) -> int:
        """Number of scripted items not yet consumed."""
        with self._lock:
            return len(self._queue)

    # -- handlers ----------------------------------------------------------------------------

    def _next_item(self, body: dict[str, Any]) -> FakeItem:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
        if responder is None:
            return FakeReply(content="ok")
        try:
            return responder(body)
        except Exception as exc:  # surface responder bugs as a visible 500
            return FakeFailure(500, f"fake responder raised {type(exc).__name__}: {exc}")

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await _read_json(request)
        except ValueError:
            return _json_error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return _json_error(400, "request body must be a JSON object")
        with self._lock:
            self.requests.append(body)
            self.request_times.append(time.monotonic())
        item = self._next_item(body)
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        if isinstance(item, FakeRaw):
            if item.delay_s > 0:
                await asyncio.sleep(item.delay_s)
            return web.Response(
                body=item.body.encode(),
                status=item.status,
                headers=item.headers,
                content_type=item.content_type,
            )
        if isinstance(item, FakeFailure):
            if item.delay_s > 0:
                await asyncio.sleep(item.delay_s)
            headers: dict[str, str] = {}
            value = item.retry_after
            if isinstance(value, str):
                headers["Retry-After"] = value
            elif value is not None:
                headers["Retry-After"] = str(int(value)) if value == int(value) else str(value)
            if item.retry_after_ms is not None:
                headers["retry-after-ms"] = f"{item.retry_after_ms:g}"
            return _json_error(item.status, item.message, headers or None)
        model = str(body.get("model") or (self.models[0] if self.models else "fake-model"))
        done = _completion_body(item, model, body)
        return await _stream(request, _chunks(done, body)) if body.get("stream") else _json(done)

    async def _handle_embeddings(self, request: web.Request) -> web.Response:
        """Embeddings are computed, not scripted; requests are recorded like chat ones."""
        try:
            body = await _read_json(request)
        except ValueError:
            return _json_error(400, "request body is not valid JSON")
        if not isinstance(body, dict) or not body.get("input"):
            return _json_error(400, "an embeddings request needs a non-empty input")
        with self._lock:
            self.requests.append(body)
            self.request_times.append(time.monotonic())
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        return _json(_embeddings_body(body, self.embedding_dim))

    async def _handle_images(self, request: web.Request) -> web.Response:
        """OpenAI's image generation: one tiny PNG per image asked for (``n``)."""
        try:
            body = await _read_json(request)
        except ValueError:
            return _json_error(400, "request body is not valid JSON")
        if not isinstance(body, dict) or not body.get("prompt"):
            return _json_error(400, "an image generation request needs a prompt")
        with self._lock:
            self.requests.append(body)
            self.request_times.append(time.monotonic())
            # A scripted failure at the head of the queue fails this request too.
            head = self._queue[0] if self._queue else None
            failure = head if isinstance(head, FakeFailure) else None
            if failure is not None:
                self._queue.popleft()
        if failure is not None:
            return _json_error(failure.status, failure.message)
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        revised = f"{body['prompt']} (as drawn by the fake)"
        images: list[dict[str, Any]] = []
        for i in range(int(body.get("n") or 1)):
            if self.image_format == "url" or body.get("response_format") == "url":
                url = f"http://{self.host}:{self.port}/v1/images/files/image-{i}.png"
                images.append({"url": url, "revised_prompt": revised})
            else:
                encoded = base64.b64encode(tiny_png()).decode()
                images.append({"b64_json": encoded, "revised_prompt": revised})
        # gpt-image models report tokens (litellm prices them); the dall-e ones do not.
        prompt_tokens = _estimate_tokens(str(body["prompt"]))
        usage = {
            "input_tokens": prompt_tokens,
            "output_tokens": 272 * len(images),
            "total_tokens": prompt_tokens + 272 * len(images),
            "input_tokens_details": {"text_tokens": prompt_tokens, "image_tokens": 0},
        }
        return _json({"created": int(time.time()), "data": images, "usage": usage})

    async def _handle_image_file(self, request: web.Request) -> web.Response:
        return web.Response(body=tiny_png(), content_type="image/png")

    async def _handle_models(self, request: web.Request) -> web.Response:
        created = int(time.time())
        data = [
            {"id": name, "object": "model", "created": created, "owned_by": "caramba-fake"}
            for name in self.models
        ]
        return _json({"object": "list", "data": data})


class ThreadedFakeLLMServer:
    """:class:`FakeLLMServer` running on its own event loop in a daemon thread.

    Use from synchronous code (``with ThreadedFakeLLMServer() as s: ...``) or to serve other
    processes. ``script``/``set_responder``/``requests``/``request_times``/``base_url``/
    ``latency_s`` mirror the async server.
    """

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Sequence[str] = DEFAULT_MODELS,
    ) -> None:
        self._server = FakeLLMServer(latency_s=latency_s, host=host, port=port, models=models)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 10.0) -> None:
        """Start the loop thread and bind the server; returns once it is serving."""
        if self._thread is not None:
            raise RuntimeError("ThreadedFakeLLMServer already started")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=self._run_loop, args=(loop,), name="fake-llm-server", daemon=True
        )
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            asyncio.run_coroutine_threadsafe(self._server.start(), loop).result(timeout)
        except BaseException:
            self._shutdown_loop()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server and join the thread (idempotent)."""
        if self._loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._server.stop(), self._loop).result(timeout)
        finally:
            self._shutdown_loop(timeout)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.run_forever()

    def _shutdown_loop(self, timeout: float = 10.0) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()

    # -- delegated API -----------------------------------------------------------------------

    @property
    def server(self) -> FakeLLMServer:
        """The underlying async server (touch its loop-bound parts only from its thread)."""
        return self._server

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        return self._server.base_url

    @property
    def latency_s(self) -> float:
        return self._server.latency_s

    @latency_s.setter
    def latency_s(self, value: float) -> None:
        self._server.latency_s = value

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Snapshot of the request bodies received so far, in order."""
        with self._server._lock:
            return list(self._server.requests)

    @property
    def request_times(self) -> list[float]:
        """Snapshot of the requests' arrival times (``time.monotonic()``), in order."""
        with self._server._lock:
            return list(self._server.request_times)

    @property
    def pending(self) -> int:
        return self._server.pending

    def script(self, *items: FakeItem) -> None:
        self._server.script(*items)

    def set_responder(self, fn: Responder | None) -> None:
        self._server.set_responder(fn)


async def _serve_forever(args: argparse.Namespace) -> None:
    server = FakeLLMServer(
        latency_s=args.latency_ms / 1000.0,
        host=args.host,
        port=args.port,
        models=args.model or DEFAULT_MODELS,
    )
    async with server:
        print(f"fake LLM server listening on {server.base_url}", flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> None:
    """CLI entry point: serve the default ``"ok"`` reply with a fixed latency until Ctrl-C."""
    parser = argparse.ArgumentParser(description="OpenAI-compatible fake LLM server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8999)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--model", action="append", help="model name for /v1/models (repeatable)")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve_forever(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
