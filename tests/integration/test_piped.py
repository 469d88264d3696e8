"""The turn's scripts on one connection, several per write (``core.state.piped``), against
the real Redis: replies reach their callers in order, an error reply stays its own
command's, a script the server forgot is loaded again, a lost connection is retried on a
new one, a cancelled caller leaves the connection usable, fakeredis goes without, and
``[redis] pipe_scripts = false`` switches it off. A command sent ``before`` a script (a
save's staged state) goes in the same write, first, piped or not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import fakeredis
import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from core.llm.scripted import Reply, ScriptedModel, call
from core.process.wiring import connect_redis
from core.runs.control import start_run
from core.state.piped import Pipe, PipedScript
from core.types import AgentSpec
from core.types.run import RunStatus
from tests.conftest import REDIS_URL, make_settings

pytestmark = pytest.mark.integration

ECHO = "redis.call('SET', KEYS[1], ARGV[1]); return {ARGV[1], redis.call('GET', KEYS[1])}"
FAIL = "return redis.error_reply('ERR no such thing: ' .. ARGV[1])"

Piped = tuple[Redis, Pipe]


def _client() -> Redis:
    """A client made as the processes make theirs (hiredis packing, the retry)."""
    return connect_redis(make_settings(redis={"url": REDIS_URL}))


@pytest.fixture
async def piped() -> AsyncIterator[Piped]:
    """A client and its pipe, both closed after the test."""
    client = _client()
    pipe = Pipe(client)
    try:
        yield client, pipe
    finally:
        await pipe.aclose()
        await client.aclose()


async def _writes(pipe: Pipe) -> list[int]:
    """Counts the writes the pipe's connection makes from now on."""
    link = pipe._link or await pipe._connect()
    writer, counted = link.conn._writer, []
    writelines = writer.writelines

    def counting(parts: list[bytes]) -> None:
        counted.append(sum(map(len, parts)))
        writelines(parts)

    writer.writelines = counting
    return counted


async def _sent(pipe: Pipe) -> list[str]:
    """The commands the pipe sends from now on, by name."""
    names: list[str] = []
    execute = pipe.execute

    async def named(*args: Any, before: Any = ()) -> Any:
        names.append(str(args[0]) if not before else f"{before[0]}+{args[0]}")
        return await execute(*args, before=before)

    pipe.execute = named  # type: ignore[method-assign]
    return names


async def test_many_callers_get_their_own_replies_in_few_writes(
    real_redis: Any, piped: Piped
) -> None:
    client, pipe = piped
    echo = PipedScript(client, pipe, ECHO)
    prefix = real_redis.test_prefix
    writes = await _writes(pipe)
    replies = await asyncio.gather(
        *(echo(keys=[f"{prefix}:k{i}"], args=[f"v{i}"]) for i in range(200))
    )
    assert replies == [[f"v{i}", f"v{i}"] for i in range(200)]
    assert 1 <= len(writes) <= 4, writes  # one write a loop round, not one each


async def test_a_burst_bigger_than_a_write_goes_in_parts(real_redis: Any, piped: Piped) -> None:
    client, pipe = piped
    echo = PipedScript(client, pipe, ECHO)
    prefix, big = real_redis.test_prefix, "x" * 8192
    writes = await _writes(pipe)
    replies = await asyncio.gather(
        *(echo(keys=[f"{prefix}:k{i}"], args=[f"{i}{big}"]) for i in range(400))
    )
    assert replies == [[f"{i}{big}", f"{i}{big}"] for i in range(400)]
    assert len(writes) >= 12 and max(writes) <= 300 * 1024, writes  # 3.2 MB in parts


async def test_an_error_reply_is_its_own_commands_only(real_redis: Any, piped: Piped) -> None:
    client, pipe = piped
    echo, fail = PipedScript(client, pipe, ECHO), PipedScript(client, pipe, FAIL)
    key = f"{real_redis.test_prefix}:k"
    got = await asyncio.gather(
        echo(keys=[key], args=["a"]),
        fail(args=["x"]),
        echo(keys=[key], args=["b"]),
        return_exceptions=True,
    )
    assert got[0] == ["a", "a"] and got[2] == ["b", "b"]
    assert isinstance(got[1], ResponseError) and "no such thing: x" in str(got[1])


async def test_a_script_the_server_forgot_is_loaded_again(real_redis: Any, piped: Piped) -> None:
    client, pipe = piped
    # A script of this test's own (its sha), never loaded: the server answers NOSCRIPT as
    # a restarted one does (flushing the scripts would reach the other tests' too).
    text = ECHO + " -- " + real_redis.test_prefix
    echo = PipedScript(client, pipe, text)
    key = f"{real_redis.test_prefix}:k"
    sent = await _sent(pipe)
    assert await echo(keys=[key], args=["a"]) == ["a", "a"]
    assert sent == ["EVALSHA", "SCRIPT", "EVALSHA"]
    assert await echo(keys=[key], args=["b"]) == ["b", "b"]  # loaded now


# Reads the key the command before it wrote (or says it is missing).
STAGED = "return redis.call('GET', KEYS[1]) or 'missing'"


async def test_a_command_before_a_script_goes_first_in_the_same_write(
    real_redis: Any, piped: Piped
) -> None:
    client, pipe = piped
    read = PipedScript(client, pipe, STAGED)
    key = f"{real_redis.test_prefix}:staged"
    assert await read(keys=[key]) == "missing"  # (the script loaded)
    writes = await _writes(pipe)
    got = await read(keys=[key], before=("SET", key, "x" * 30_000, "PX", 60_000))
    assert got == "x" * 30_000 and len(writes) == 1
    assert 0 < await real_redis.pttl(key) <= 60_000
    # A script the server forgot: both are sent again (loaded in between).
    forgot = PipedScript(client, pipe, STAGED + " -- " + real_redis.test_prefix)
    sent = await _sent(pipe)
    assert await forgot(keys=[key], before=("SET", key, "again")) == "again"
    assert sent == ["SET+EVALSHA", "SCRIPT", "SET+EVALSHA"]


@pytest.mark.parametrize("kind", ["real", "fakeredis"])
async def test_without_a_pipe_the_command_before_goes_in_one_round_trip(
    real_redis: Any, kind: str
) -> None:
    """No pipe (fakeredis, ``pipe_scripts = false``): a redis-py pipeline of the two, with
    NOSCRIPT answered by loading the script and sending both again."""
    client = _client() if kind == "real" else fakeredis.FakeAsyncRedis(decode_responses=True)
    key = f"{real_redis.test_prefix}:staged"
    try:
        read = PipedScript(client, None, STAGED + " -- " + real_redis.test_prefix)
        assert await read(keys=[key], before=("SET", key, "v1", "PX", 60_000)) == "v1"
        assert await read(keys=[key], before=("SET", key, "v2")) == "v2"  # loaded now
        fail = PipedScript(client, None, FAIL)
        with pytest.raises(ResponseError, match="no such thing: y"):
            await fail(args=["y"], before=("SET", key, "v3"))
    finally:
        await client.delete(key)
        await client.aclose()


async def test_a_lost_connection_is_retried_on_a_new_one(real_redis: Any, piped: Piped) -> None:
    client, pipe = piped
    echo = PipedScript(client, pipe, ECHO)
    key = f"{real_redis.test_prefix}:k"
    assert await echo(keys=[key], args=["a"]) == ["a", "a"]
    link = pipe._link
    assert link is not None
    # The server drops the pipe's connection under it, as a restart or a failover does.
    await real_redis.execute_command("CLIENT", "KILL", "ID", await _client_id(pipe))
    assert await echo(keys=[key], args=["b"]) == ["b", "b"]
    assert pipe._link is not None and pipe._link is not link  # a new connection


async def _client_id(pipe: Pipe) -> Any:
    return await pipe.execute("CLIENT", "ID")


async def test_a_cancelled_caller_leaves_the_connection_usable(
    real_redis: Any, piped: Piped
) -> None:
    client, pipe = piped
    echo = PipedScript(client, pipe, ECHO)
    key = f"{real_redis.test_prefix}:k"
    slow = asyncio.ensure_future(pipe.execute("BLPOP", f"{key}:never", "0.3"))
    await asyncio.sleep(0.05)
    slow.cancel()  # its reply (nil, in 0.3 s) is read and dropped
    link = pipe._link
    assert await echo(keys=[key], args=["after"]) == ["after", "after"]
    assert pipe._link is link  # the same connection, still in order


async def test_fakeredis_goes_through_the_client() -> None:
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    assert not Pipe.usable(client)
    echo = PipedScript(client, None, ECHO)
    assert await echo(keys=["k"], args=["a"]) == ["a", "a"]
    await client.aclose()


@pytest.mark.parametrize("pipe_scripts", [True, False], ids=["piped", "switched-off"])
async def test_a_run_completes_with_the_pipe_on_or_switched_off(
    make_services: Any, real_redis: Any, pipe_scripts: bool
) -> None:
    """``[redis] pipe_scripts = false`` (the kill switch): the turn's scripts go through the
    pool as every other command does, and a run still completes."""
    model = ScriptedModel().script(
        "O",
        Reply(calls=(call("calculate", {"expression": "6*7"}),)),
        Reply(calls=(call("finish", {"result": "42"}),)),
    )
    settings = make_settings(redis={"url": REDIS_URL, "pipe_scripts": pipe_scripts})
    svc = make_services(settings, model, redis=real_redis)
    assert (svc.store.pipe is not None) is pipe_scripts
    spec = AgentSpec(name="O", role="orchestrator", tools=("calculate", "finish"))
    run_id = await start_run(svc, "six times seven", spec)
    await svc.scheduler.join()
    head = await svc.store.run_head(run_id)
    assert head.status is RunStatus.COMPLETED
    assert len(model.requests) == 2
