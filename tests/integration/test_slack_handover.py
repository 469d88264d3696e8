"""Real `caramba slack` processes handing runs over: a bot stopped gracefully (SIGTERM or
Ctrl-C; HTTP mode under uvicorn, or Socket Mode) gives its leases up before it exits, and
another bot process relays its runs within 5 s even with leases of 30 s; a bot killed with
kill -9 holds them until they lapse, and another takes them over within 5 s with the
default lease. Runs are written by the test (as a worker would), the Web API is the fake.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from bots.chat.store import ChatStore
from bots.chat.threads import Shown, Threads
from bots.slack.blocks import CANCEL, FEEDBACK_UP
from core.config import SlackSettings
from core.state.keys import Keys
from core.state.store import Store
from core.types.agent import EndReason
from core.types.events import AgentCreated, AgentFinished, RunFinished, RunStarted
from core.types.run import RunState, RunStatus
from tests.conftest import REDIS_URL
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.processes import Process, worker_env

pytestmark = pytest.mark.integration
CHANNEL, THREAD, RUN = "C1", "1700000000.000100", "run_handover1"
TAKEOVER_S = 5.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Bots:
    """Bot processes (``python -m bots.cli slack``) on one Redis prefix and the fake."""

    def __init__(self, prefix: str, slack: FakeSlackAPI, **settings: str) -> None:
        self.prefix, self.slack, self.settings = prefix, slack, settings
        self.procs: list[Process] = []

    def start(self, name: str, *, socket_mode: bool = False) -> Process:
        env = worker_env(
            redis__url=REDIS_URL,
            redis__key_prefix=self.prefix,
            celery__queue=f"{self.prefix}-q",
            slack__api_url=self.slack.url,
            **self.settings,
        )
        env |= {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "secret"}
        if socket_mode:
            env["SLACK_APP_TOKEN"] = "xapp-test"
        port = str(free_port())
        args = [sys.executable, "-m", "bots.cli", "slack", "--host", "127.0.0.1", "--port", port]
        proc = Process(args, env, name)
        self.procs.append(proc)
        return proc

    async def up(self, proc: Process) -> None:
        """Wait (without blocking the loop: the fake answers the bots) until it is up."""
        await until(lambda: _said(proc, "the Slack bot is up"), 20, f"{proc.name} up")

    async def stop(self, proc: Process, sig: int = signal.SIGTERM) -> int:
        proc.proc.send_signal(sig)
        await until(lambda: _done(proc), 15, f"{proc.name} exits")
        assert proc.returncode is not None
        return proc.returncode

    async def aclose(self) -> None:
        """Stop every bot still running (answering the fake meanwhile: a Socket Mode bot
        says goodbye on its websocket), then remove their logs."""
        for proc in self.procs:
            if proc.returncode is None:
                await self.stop(proc)
            proc.cleanup()


async def _said(proc: Process, text: str) -> bool:
    if proc.returncode is not None:
        raise AssertionError(f"{proc.name} exited ({proc.returncode}):\n{proc.tail()}")
    return text in proc.output()


async def _done(proc: Process) -> bool:
    return proc.returncode is not None


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> float:
    """Poll ``check`` until it says yes; the seconds it took."""
    start = time.monotonic()
    while not await check():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"no {what} within {timeout_s} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - start


@asynccontextmanager
async def a_run(redis: Any, **settings: str) -> AsyncIterator[tuple[Store, Bots]]:
    """A running run with two agents, linked to its thread and relayed by nobody yet."""
    prefix = redis.test_prefix
    store = Store(redis, Keys(prefix), 10_000)
    await store.create_run(RunState(id=RUN, task="Compare flights", status=RunStatus.RUNNING))
    threads = Threads(ChatStore(redis, prefix, "slack"))
    await threads.link(Shown(run_id=RUN, channel=CHANNEL, thread=THREAD))
    await store.emit(
        RunStarted(run_id=RUN, task="Compare flights"),
        *(
            AgentCreated(run_id=RUN, agent_id=a, name=a.title(), role="lead", model="m")
            for a in ("ana", "bo")
        ),
    )
    slack = await FakeSlackAPI().start()
    bots = Bots(prefix, slack, **settings)
    try:
        yield store, bots
    finally:
        await bots.aclose()
        await slack.stop()


def milestone(agent: str, text: str) -> AgentFinished:
    return AgentFinished(run_id=RUN, agent_id=agent, reason=EndReason.FINISHED, result=text)


async def holder(redis: Any) -> int | None:
    """The pid of the bot process holding the run's lease, if any."""
    owner = await redis.get(f"{redis.test_prefix}:slack:lease:{RUN}")
    return None if owner is None else int(owner.split(":")[1])


def posted(slack: FakeSlackAPI) -> list[str]:
    return [p["text"] for p in slack.of("chat.postMessage")]


async def relayed(slack: FakeSlackAPI, text: str, timeout_s: float = 10) -> None:
    await until(lambda: _has(slack, text), timeout_s, f"post of {text!r}")


async def _has(slack: FakeSlackAPI, text: str) -> bool:
    return any(text in t for t in posted(slack))


async def ended_in_order(slack: FakeSlackAPI, store: Store, redis: Any) -> None:
    """Finish the run; the thread then holds the status message, both milestones and
    the result, once each and in that order, and the status shows the ended run."""
    await store.emit(RunFinished(run_id=RUN, status=RunStatus.COMPLETED, result="49 EUR"))
    await relayed(slack, "49 EUR")
    await until(lambda: _cleared(redis), 10, "the relay's end")
    texts = posted(slack)
    assert len(texts) == 4 and "agents" in texts[0], texts
    assert texts[1:] == ["*Ana* finished:\nfares", "*Bo* finished:\ntrains", "49 EUR"]
    assert FEEDBACK_UP in json.dumps(slack.of("chat.postMessage")[-1]["blocks"])
    final = slack.of("chat.update")[-1]
    assert "Run completed" in final["text"] and CANCEL not in json.dumps(final["blocks"])


async def _cleared(redis: Any) -> bool:
    return not await redis.hexists(f"{redis.test_prefix}:slack:relays", RUN)


@pytest.mark.parametrize(
    ("mode", "sig"),
    [("http", signal.SIGTERM), ("http", signal.SIGINT), ("socket", signal.SIGTERM)],
    ids=["http-sigterm", "http-ctrl-c", "socket-mode-sigterm"],
)
async def test_a_bot_stopped_gracefully_hands_its_runs_over_at_once(
    real_redis, mode: str, sig: int
) -> None:
    # Leases of 30 s: a run moves within 5 s only because its holder gave it up.
    async with a_run(real_redis, slack__relay_lease_s="30") as (store, bots):
        slack, socket_mode = bots.slack, mode == "socket"
        a = bots.start("slack-a", socket_mode=socket_mode)
        await bots.up(a)
        await until(lambda: _held_by(real_redis, a), 10, "bot a's lease")
        await store.emit(milestone("ana", "fares"))
        await relayed(slack, "fares")
        b = bots.start("slack-b", socket_mode=socket_mode)
        await bots.up(b)
        assert await holder(real_redis) == a.pid

        stopped = time.monotonic()
        code = await bots.stop(a, sig)
        exited = time.monotonic() - stopped
        assert await holder(real_redis) in (None, b.pid), "a gave its lease up"
        assert "stopped relaying 1 runs" in a.output(), a.tail()
        taken = await until(lambda: _held_by(real_redis, b), TAKEOVER_S, "b's takeover")
        taken += exited
        print(
            f"\n[{mode}, {signal.Signals(sig).name}] a exited ({code}) {exited:.2f} s after "
            f"the signal; b relays the run {taken:.2f} s after it"
        )
        await store.emit(milestone("bo", "trains"))
        await ended_in_order(slack, store, real_redis)


async def test_a_killed_bots_runs_are_taken_over_within_5_s(real_redis) -> None:
    assert SlackSettings().relay_lease_s <= 3.5, "the default lease lets a run move in 5 s"
    async with a_run(real_redis) as (store, bots):
        slack = bots.slack
        a, b = bots.start("slack-a"), bots.start("slack-b")
        await bots.up(a)
        await bots.up(b)
        await until(lambda: _held(real_redis), 10, "a lease")
        first, second = (a, b) if await holder(real_redis) == a.pid else (b, a)
        await store.emit(milestone("ana", "fares"))
        await relayed(slack, "fares")

        # Slack fails as the next milestone comes: it stays in the outbox of the holder …
        await slack.go_down("5xx")
        await store.emit(milestone("bo", "trains"))
        await until(lambda: _queued(real_redis), 5, "the milestone queued")
        first.proc.kill()  # … which dies with it
        killed = time.monotonic()
        await until(lambda: _done(first), 5, "the kill")
        await slack.come_back()
        taken = await until(lambda: _held_by(real_redis, second), TAKEOVER_S, "the takeover")
        taken = time.monotonic() - killed
        print(f"\n[kill -9] the other bot relays the run {taken:.2f} s after the kill")
        assert taken < TAKEOVER_S
        await relayed(slack, "trains", TAKEOVER_S)  # from the dead one's outbox
        await ended_in_order(slack, store, real_redis)


async def _held_by(redis: Any, proc: Process) -> bool:
    return await holder(redis) == proc.pid


async def _held(redis: Any) -> bool:
    return await holder(redis) is not None


async def _queued(redis: Any) -> bool:
    return bool(await redis.llen(f"{redis.test_prefix}:slack:outbox:{RUN}"))
