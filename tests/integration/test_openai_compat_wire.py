"""The direct client's own HTTP exchange (core/llm/http_post.py) against servers that answer
in each way HTTP allows: chunked, gzipped, closing the connection after each answer, after
an informational answer, by redirect; the head it sends is the one aiohttp would; headers it
cannot send as they are go through aiohttp, which refuses them as before."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from core.config import LLMSettings
from core.errors import LLMError
from core.llm.base import LLMRequest
from core.llm.openai_compat import OpenAICompatClient
from core.types.chat import ChatMessage

pytestmark = pytest.mark.integration

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _completion(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    usage = {"prompt_tokens": 3, "completion_tokens": 2}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}


@contextlib.asynccontextmanager
async def _serving(handler: Handler, path: str = "/v1/chat/completions") -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post(path, handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


async def _calls(base: str, n: int = 3, **llm: Any) -> list[str | None]:
    client = OpenAICompatClient(LLMSettings(api_base=base, max_attempts=1, **llm))
    request = LLMRequest(model="openai/m", messages=(ChatMessage(role="user", content="hi"),))
    try:
        return [(await client.complete(request)).content for _ in range(n)]
    finally:
        await client.aclose()


@pytest.mark.parametrize("how", ["chunked", "gzip", "close"])
async def test_answers_in_every_framing_are_read_and_the_connection_reused_or_not(
    how: str,
) -> None:
    peers: list[Any] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        peers.append(request.transport.get_extra_info("peername") if request.transport else None)
        sent = await request.json()
        body = json.dumps(_completion(f"{how} {sent['messages'][0]['content']}")).encode()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if how == "chunked":
            response.enable_chunked_encoding()
        if how == "gzip":
            response.enable_compression(web.ContentCoding.gzip)
        if how == "close":
            response.force_close()
        await response.prepare(request)
        for part in (body[:10], body[10:]):
            await response.write(part)
        await response.write_eof()
        return response

    async with _serving(answer) as base:
        assert await _calls(base) == [f"{how} hi"] * 3
    if how in ("chunked", "gzip"):
        assert len(set(peers)) == 1  # one connection, kept alive
    else:
        assert len(set(peers)) == 3  # closed after each answer


async def test_a_body_that_ends_with_the_connection_is_read() -> None:
    """No Content-Length, not chunked: the body is what comes until the server closes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        body = json.dumps(_completion("until closed")).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        assert await _calls(f"http://127.0.0.1:{port}/v1", 2) == ["until closed"] * 2


async def test_an_informational_answer_first_is_skipped() -> None:
    async def answer(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.write(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
        return web.json_response(_completion("after 103"))

    async with _serving(answer) as base:
        assert await _calls(base, 2) == ["after 103"] * 2


async def test_a_redirect_is_followed_with_the_body() -> None:
    async def moved(request: web.Request) -> web.StreamResponse:
        raise web.HTTPPermanentRedirect("/v2/chat/completions")

    async def answer(request: web.Request) -> web.StreamResponse:
        sent = await request.json()
        return web.json_response(_completion(sent["messages"][0]["content"] + " at v2"))

    app = web.Application()
    app.router.add_post("/v1/chat/completions", moved)
    app.router.add_post("/v2/chat/completions", answer)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        base = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        assert await _calls(base, 2) == ["hi at v2"] * 2
    finally:
        await runner.cleanup()


async def test_the_head_is_aiohttps_and_a_key_aiohttp_refuses_is_still_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    heads: list[dict[str, str]] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        heads.append(dict(request.headers))
        return web.json_response(_completion("ok"))

    monkeypatch.setenv("WIRE_KEY", "sk-plain")
    async with _serving(answer) as base:
        assert await _calls(base, 1, api_key_env="WIRE_KEY") == ["ok"]
        (head,) = heads
        assert head["Authorization"] == "Bearer sk-plain"
        assert head["Content-Type"] == "application/json"
        assert head["Host"] == base.removeprefix("http://").removesuffix("/v1")
        assert head["User-Agent"].startswith("Python/") and "aiohttp/" in head["User-Agent"]
        assert head["Accept-Encoding"] == "gzip, deflate" and head["Accept"] == "*/*"
        assert int(head["Content-Length"]) > 0
        monkeypatch.setenv("WIRE_KEY", "sk-broken\r\nX-Injected: 1")
        with pytest.raises(LLMError):
            await _calls(base, 1, api_key_env="WIRE_KEY")
    assert len(heads) == 1  # nothing sent with the broken key


async def test_an_answer_not_read_to_its_end_gives_its_connection_back_closed() -> None:
    """A caller that stops reading (a stream left early, an error read in part) must not
    leave its connection held: with a pool of one, every next call would wait forever."""
    import aiohttp
    from yarl import URL

    from core.llm.http_post import Poster

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(b"data: first\n\n")
        await response.write(b"data: " + b"x" * 70_000 + b"\n\n")
        await response.write_eof()
        return response

    async with _serving(answer) as base:
        poster = Poster(URL(f"{base}/chat/completions"), {"Content-Type": "application/json"})
        connector = aiohttp.TCPConnector(limit=1)
        async with aiohttp.ClientSession(connector=connector) as session:
            for _ in range(3):
                async with asyncio.timeout(5), poster.post(session, b"{}") as got:
                    assert got.status == 200
                    assert await got.content.readline() == b"data: first\n"
