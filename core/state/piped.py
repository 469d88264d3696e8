"""The turn's scripts sent on one connection, several per write (auto-pipelining).

A worker with hundreds of turns in flight sends their start and save scripts one round
trip each. Through redis-py every one takes a connection from the pool, wraps its send and
read in the pool's and the retry's machinery, writes on its own and waits for its reply
alone: about a fifth of a busy worker's CPU per turn (``bench/throughput.py`` under
cProfile), and one write and one read on each side per script. A :class:`Pipe` keeps one
connection of the client's pool for them instead: the scripts asked for during one round
of the event loop are written together, and one reader takes the replies in order (Redis
answers a connection's commands in the order they came), each to its caller. Redis runs
them one after the other as before: a script is atomic either way.

What a caller sees is what redis-py gives: the same decoded reply, the same error reply
raised (``ResponseError``, ``NoScriptError``: :class:`PipedScript` loads the script and
sends it again, as redis-py's ``Script`` does), and on a lost connection the same retry
— the connection's ``Retry`` (``redis.retries`` and its back-off) calls again on a new
connection, every script of the lost one failing with the connection error for its
caller to retry. The scripts sent this way are the turn's start and save (and the save's
read of the run), which redis-py's retry sent again the same way before (a save sent again
is recognised by its token): nothing else changes its way to Redis. A caller cancelled
while its reply is on its way leaves the connection as it is (the reply is read and
dropped), where redis-py closes it.

Embedded mode's in-process Redis (fakeredis) has no connection to share: there the
scripts go through the client as before.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

# Bytes of scripts gathered before they are written without waiting for the loop round's
# end, and bytes written and not yet taken by the socket above which a script waits for
# Redis to read (a burst of a thousand saves is ~10 MB: not held here whole).
_WRITE = 256 * 1024
_HELD = 1024 * 1024


class _Link:
    """One connection of the pipe: its commands written or buffered, oldest first, and the
    task reading their replies. Lost, it is dropped whole; the next command makes another."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.out: list[bytes] = []
        self.size = 0  # bytes in out
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.flush_due = False
        self.reader: asyncio.Task[None] | None = None
        self.lost = False


class Pipe:
    """One connection of ``redis``'s pool, commands written a loop round at a time and
    their replies read in order (see the module docstring)."""

    def __init__(self, redis: Redis) -> None:
        self._pool = redis.connection_pool
        self._link: _Link | None = None
        self._connecting: asyncio.Lock | None = None

    @staticmethod
    def usable(redis: Redis) -> bool:
        """Whether ``redis`` talks to a server over a connection (not fakeredis's)."""
        kind = getattr(redis.connection_pool, "connection_class", None)
        return kind is not None and not kind.__module__.startswith("fakeredis")

    async def execute(self, *args: Any, before: Sequence[Any] = ()) -> Any:
        """Send one command (right after ``before``, a command whose reply is not wanted),
        with the connection's retry on a lost connection."""
        link = self._link or await self._connect()
        return await link.conn.retry.call_with_retry(lambda: self._send(args, before), _nothing)

    async def _send(self, args: Sequence[Any], before: Sequence[Any] = ()) -> Any:
        link = self._link or await self._connect()
        writer = link.conn._writer
        if writer is not None and writer.transport.get_write_buffer_size() > _HELD:
            # Redis reads slower than the turns write: wait for it, as a connection of
            # one's own would, rather than holding their bytes here.
            try:
                await writer.drain()
            except OSError as exc:  # the connection went meanwhile: said as redis-py does
                lost = _lost(exc)
                self._drop(link, lost)
                raise lost from exc
            link = self._link or await self._connect()
        loop = asyncio.get_running_loop()
        first: asyncio.Future[Any] | None = None
        if before:
            first = loop.create_future()
            self._queue(link, before, first)
        future: asyncio.Future[Any] = loop.create_future()
        self._queue(link, args, future)
        if link.size > _WRITE:  # a write's worth already: written now
            self._flush(link)
        elif not link.flush_due:
            link.flush_due = True
            loop.call_soon(self._flush, link)
        try:
            return await future
        finally:
            # ``before``'s reply came first; its error, if any, is the command's to tell
            # (the save script refuses to apply without the state staged before it).
            if first is not None and first.done() and not first.cancelled():
                first.exception()

    @staticmethod
    def _queue(link: _Link, args: Sequence[Any], future: asyncio.Future[Any]) -> None:
        packed = link.conn.pack_command(*args)
        link.out.extend(packed)
        link.size += sum(map(len, packed))
        link.waiting.append(future)

    async def _connect(self) -> _Link:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._link is None:
                conn = self._pool.make_connection()
                await conn.connect()  # the pool's handshake: TLS, AUTH, SELECT, RESP
                self._link = _Link(conn)
            return self._link

    def _flush(self, link: _Link) -> None:
        link.flush_due = False
        data, link.out, link.size = link.out, [], 0
        if link.lost or not data:
            return
        try:
            writer = link.conn._writer
            if writer is None:
                raise RedisConnectionError("the connection to Redis was closed")
            writer.writelines(data)  # (uvloop writes the parts as they are, no joined copy)
        except Exception as exc:  # not written: each caller gets the error (and retries)
            self._drop(link, _lost(exc))
            return
        if link.reader is None or link.reader.done():
            link.reader = asyncio.get_running_loop().create_task(self._read(link))

    async def _read(self, link: _Link) -> None:
        """Read replies while commands wait for one, each to the oldest waiting."""
        while link.waiting and not link.lost:
            try:
                reply = await link.conn.read_response()
            except ResponseError as error:  # an error reply: its own command's
                reply = error
            except BaseException as exc:
                self._drop(link, _lost(exc))
                if isinstance(exc, asyncio.CancelledError):
                    raise
                return
            future = link.waiting.popleft()
            if future.done():  # its caller was cancelled: the reply is dropped
                continue
            if isinstance(reply, ResponseError):
                future.set_exception(reply)
            else:
                future.set_result(reply)

    def _drop(self, link: _Link, exc: BaseException, *, close: bool = True) -> None:
        """``link``'s connection is lost: every command on it fails with ``exc`` (and the
        connection is closed, in a task of its own with ``close``)."""
        if link.lost:
            return
        link.lost = True
        if self._link is link:
            self._link = None
        link.out.clear()
        waiting, link.waiting = link.waiting, deque()
        for future in waiting:
            if not future.done():
                future.set_exception(exc)
        if close:
            asyncio.get_running_loop().create_task(_disconnect(link.conn))

    async def aclose(self) -> None:
        link = self._link
        if link is None:
            return
        reader = link.reader
        self._drop(link, RedisConnectionError("the pipe to Redis was closed"), close=False)
        if reader is not None and not reader.done():
            reader.cancel()
        await _disconnect(link.conn)


class PipedScript:
    """A Lua script of the turn's hot path: sent on the :class:`Pipe` where there is one,
    through the client's own ``Script`` otherwise; called as redis-py's ``Script`` is."""

    def __init__(self, redis: Redis, pipe: Pipe | None, text: str) -> None:
        self.script = redis.register_script(text)
        self._pipe = pipe

    async def __call__(
        self,
        keys: Sequence[Any] = (),
        args: Sequence[Any] = (),
        client: Any = None,
        before: Sequence[Any] = (),
    ) -> Any:
        """Run the script (on ``client`` instead, a pipeline say, when one is given);
        ``before``: a command sent right before it on the same connection, in the same
        write, its reply not wanted (the save's staged state, ``core.state.staged``)."""
        pipe = self._pipe
        if before and client is None and pipe is None:
            return await self._unpiped(keys, args, before)
        if pipe is None or client is not None:
            return await self.script(keys=keys, args=args, client=client)
        sha = self.script.sha
        try:
            return await pipe.execute("EVALSHA", sha, len(keys), *keys, *args, before=before)
        except NoScriptError:  # a restarted (or flushed) server: load it, then again
            self.script.sha = await pipe.execute("SCRIPT", "LOAD", self.script.script)
            evalsha = ("EVALSHA", self.script.sha, len(keys), *keys, *args)
            return await pipe.execute(*evalsha, before=before)

    async def _unpiped(
        self, keys: Sequence[Any], args: Sequence[Any], before: Sequence[Any]
    ) -> Any:
        """``before`` and the script in one round trip on a pooled connection (a redis-py
        pipeline): no pipe (fakeredis, ``redis.pipe_scripts`` off)."""
        client = self.script.registered_client
        for _ in range(2):
            async with client.pipeline(transaction=False) as pipeline:
                pipeline.execute_command(*before)
                pipeline.execute_command("EVALSHA", self.script.sha, len(keys), *keys, *args)
                replies = await pipeline.execute(raise_on_error=False)
            reply = replies[-1]
            if not isinstance(reply, NoScriptError):
                break
            self.script.sha = await client.script_load(self.script.script)
        if isinstance(reply, Exception):
            raise reply
        return reply


def _lost(exc: BaseException) -> BaseException:
    """``exc`` as the connection error redis-py raises for it."""
    if isinstance(exc, RedisConnectionError | RedisTimeoutError):
        return exc
    if isinstance(exc, asyncio.CancelledError):
        return RedisConnectionError("the pipe's reader was cancelled")
    if isinstance(exc, TimeoutError):
        return RedisTimeoutError("Timeout reading from Redis")
    return RedisConnectionError(f"Error while talking to Redis: {exc!r}")


async def _nothing(_error: BaseException) -> None:
    """The retry's hook after a failed try: a lost link was dropped already."""


async def _disconnect(conn: Any) -> None:
    try:
        await conn.disconnect()
    except Exception:  # closing a connection already lost
        pass
