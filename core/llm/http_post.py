"""One POST of a JSON body to one URL, on a pooled connection of the session's connector,
without ``ClientSession.request``'s per-call machinery: the direct client's HTTP exchange.

A model call needs none of what ``ClientSession._request`` does for every request (cookie
jars, redirects, auth, proxies, middlewares, traces, a request and a response object, a
task that writes the body): the request's head is made once per URL, with the very headers
aiohttp would send (``ClientRequest``'s own: Host, Accept, Accept-Encoding, User-Agent), and
each call writes head and body at once on a connection from the connector (its pool, limit,
DNS cache, TLS and errors) and reads the answer with its connection's own parser (chunks,
gzip, keep-alive): a third to a half less CPU per call than ``session.post``
(``bench/llm_client.py``).

Anything else goes through ``session.post`` as before: a redirect (followed there), and
headers aiohttp would refuse (a key with a line break: refused there, with its error).
It calls what ``ClientSession._request`` calls (``connector.connect`` with a
``ClientRequest``, ``set_response_params``, ``protocol.read``): aiohttp's internals, pinned
in pyproject.toml; tests/integration/test_openai_compat_wire.py checks them on an upgrade.
Owns that exchange; calls aiohttp only.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol

import aiohttp
from aiohttp.client_reqrep import ClientRequest
from multidict import CIMultiDictProxy
from yarl import URL

__all__ = ["Answer", "Poster"]

_NO_TIMEOUT = aiohttp.ClientTimeout()
# What session.post follows; the first answer to such a POST is sent again through it.
_REDIRECTS = frozenset((301, 302, 303, 307, 308))


class Answer(Protocol):
    """What a call reads of an answer (``aiohttp.ClientResponse`` has it too)."""

    status: int

    @property
    def headers(self) -> CIMultiDictProxy[str]: ...

    @property
    def content_type(self) -> str: ...

    @property
    def content(self) -> aiohttp.StreamReader: ...

    async def read(self) -> bytes: ...


class _Direct:
    """An answer read off the connection: its status, headers and body."""

    def __init__(self, status: int, headers: CIMultiDictProxy[str], body: Any) -> None:
        self.status = status
        self.headers = headers
        self.content: aiohttp.StreamReader = body

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "").partition(";")[0].strip().lower()

    async def read(self) -> bytes:
        return await self.content.read()


class Poster:
    """POSTs JSON to ``url`` with ``headers`` (made once; ``post`` per call)."""

    def __init__(self, url: URL, headers: Mapping[str, str]) -> None:
        self.url = url
        self.headers = dict(headers)
        # The connector's view of the request (made in the running loop, on first use):
        # which pooled connections fit, and how to open one (host, port, TLS).
        self._request: ClientRequest | None = None
        self._head: bytes | None = None

    def _made(self) -> tuple[ClientRequest, bytes | None]:
        if self._request is None:
            loop = asyncio.get_running_loop()
            request = ClientRequest("POST", self.url, headers=self.headers, loop=loop)
            lines = [(k, v) for k, v in request.headers.items() if k.lower() != "content-length"]
            path = self.url.raw_path_qs
            if all(map(_plain, (path, *(f"{k}: {v}" for k, v in lines)))) and " " not in path:
                text = "".join(f"{k}: {v}\r\n" for k, v in lines)
                self._head = f"POST {path} HTTP/1.1\r\n{text}Content-Length: ".encode("ascii")
            self._request = request
        return self._request, self._head

    @asynccontextmanager
    async def post(self, session: aiohttp.ClientSession, body: bytes) -> AsyncIterator[Answer]:
        """The answer to ``body`` POSTed on ``session``'s connector; its connection goes
        back to the pool when the answer was read to its end, else it is closed."""
        request, head = self._made()
        if head is None:
            async with session.post(self.url, data=body, headers=self.headers) as answer:
                yield answer
            return
        connector = session.connector
        if connector is None:
            raise aiohttp.ClientConnectionError("Session is closed")
        connection = await connector.connect(request, [], _NO_TIMEOUT)
        try:
            protocol = connection.protocol
            transport = connection.transport
            if protocol is None or transport is None:
                raise aiohttp.ServerDisconnectedError()
            # As session.post reads answers (a body without a length ends with the connection).
            protocol.set_response_params(read_until_eof=True)
            transport.write(b"%s%d\r\n\r\n%s" % (head, len(body), body))
            message, payload = await protocol.read()
            while 100 <= message.code < 200 and message.code != 101:  # informational
                message, payload = await protocol.read()
        except BaseException:
            connection.close()
            raise
        if message.code in _REDIRECTS:
            connection.close()
            async with session.post(self.url, data=body, headers=self.headers) as answer:
                yield answer
            return
        try:
            yield _Direct(message.code, message.headers, payload)
        except BaseException:
            connection.close()
            raise
        if payload.is_eof():
            connection.release()  # (closed instead if the answer said so)
        else:
            connection.close()


def _plain(text: str) -> bool:
    """Sent as it is: ASCII with no control characters (no line breaks, no tabs)."""
    return text.isascii() and text.isprintable()
