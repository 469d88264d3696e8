"""A turn's save whose reply is lost still does the turn's follow-ups, exactly once.

Real Redis behind a TCP proxy that lets one save reach Redis, then swallows Redis's reply
and cuts the client's connection — what a Redis restart or a network blip does. The
client is the production one (``connect_redis``: redis-py retries a command on a new
connection; a run change's script, sent again, finds the run's head moved by its own write
and reads its token).
The retry finds seq moved by its own save: it must count as saved, not as a duplicate.
A run change (approve, cancel, end) retried so must find itself applied, not refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlparse

import pytest

from core.agent import faults
from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.wiring import connect_redis
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.state.recorded import UPDATE_SCRIPT
from core.state.turn_script import COMMIT_SCRIPT
from core.types import AgentSpec
from core.types.events import AgentFinished, RunFinished, TurnStarted
from core.types.run import RunStatus
from tests.conftest import REDIS_URL, make_settings

pytestmark = pytest.mark.integration

TOOLS = ("create_agent", "wait_for_messages", "finish")
_SCRIPT_SHA = hashlib.sha1(COMMIT_SCRIPT.encode()).hexdigest().encode()
_UPDATE_SHA = hashlib.sha1(UPDATE_SCRIPT.encode()).hexdigest().encode()


class ReplyDropper:
    """A TCP proxy to Redis. Once armed with a marker, the next command sent with that
    marker reaches Redis whole; Redis's reply to it is swallowed and the client's
    connection cut (the proxy's side to Redis is closed gracefully, so Redis runs all
    it was sent)."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.marker: bytes | None = None
        self.dropped = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()

    def arm(self, marker: bytes) -> None:
        self.marker = marker

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection(*self.upstream)
        cut = asyncio.Event()  # set once the marked command went up: swallow the reply

        async def upward() -> None:
            with contextlib.suppress(ConnectionError):
                while data := await client_r.read(65536):
                    if self.marker is not None and self.marker in data:
                        self.marker = None
                        cut.set()
                    up_w.write(data)
                    await up_w.drain()
            with contextlib.suppress(ConnectionError, OSError):
                up_w.write_eof()

        async def downward() -> None:
            with contextlib.suppress(ConnectionError):
                while data := await up_r.read(65536):
                    if cut.is_set():
                        if not client_w.is_closing():
                            self.dropped += 1
                            client_w.close()
                        continue  # Redis's replies to a client that is gone
                    client_w.write(data)
                    await client_w.drain()
            client_w.close()

        await asyncio.gather(upward(), downward())
        up_w.close()


@pytest.fixture
async def proxied(real_redis: Any) -> AsyncIterator[tuple[ReplyDropper, Any]]:
    """The proxy and the production Redis client connected through it (same db and key
    prefix as ``real_redis``, whose fixture removes the keys)."""
    url = urlparse(REDIS_URL)
    proxy = ReplyDropper(url.hostname or "127.0.0.1", url.port or 6379)
    port = await proxy.start()
    settings = make_settings(redis={"url": f"redis://127.0.0.1:{port}{url.path}"})
    client = connect_redis(settings)
    client.test_prefix = real_redis.test_prefix  # type: ignore[attr-defined]
    # Loaded beforehand: the marked EVALSHA must run the script, not get NOSCRIPT.
    await real_redis.script_load(COMMIT_SCRIPT)
    await real_redis.script_load(UPDATE_SCRIPT)
    yield proxy, client
    await client.aclose()
    await proxy.close()


def _arm_at_after_tools(monkeypatch: pytest.MonkeyPatch, proxy: ReplyDropper, marker: bytes):
    async def point(_svc: object, name: str) -> None:
        if name == "after_tools":
            proxy.arm(marker)

    monkeypatch.setattr(faults, "point", point)


async def _events(svc: Any, run_id: str) -> list[Any]:
    return [e for _, e in await svc.store.read_events(run_id, count=1000)]


async def test_a_scripted_save_whose_reply_was_lost_still_schedules_what_follows(
    make_services, proxied, monkeypatch
) -> None:
    proxy, client = proxied
    model = ScriptedModel().script(
        "O", Reply(calls=(call("create_agent", {"name": "A", "role": "member", "purpose": "a"}),))
    )
    svc = make_services(make_settings(), model, redis=client, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "t", root)
    assert recorder.jobs == [TurnJob(run_id=run_id, agent_id=root.id, seq=0)]

    _arm_at_after_tools(monkeypatch, proxy, _SCRIPT_SHA)
    outcome = await run_turn(svc, recorder.jobs[0])

    assert proxy.dropped == 1, "the save's reply was swallowed once"
    assert outcome is TurnOutcome.CONTINUED  # before: DROPPED, and nothing followed
    child = await svc.store.resolve_name(run_id, "A")
    assert child is not None
    # The follow-ups, each once: the new agent's first turn and O's own next turn.
    assert recorder.jobs[1:] == [
        TurnJob(run_id=run_id, agent_id=child, seq=0),
        TurnJob(run_id=run_id, agent_id=root.id, seq=1),
    ]
    started = [e for e in await _events(svc, run_id) if isinstance(e, TurnStarted)]
    assert [(e.agent_id, e.seq) for e in started] == [(root.id, 0)], "saved once"
    state = await svc.store.load_agent(run_id, root.id)
    assert state is not None and state.seq == 1
    # The saved follow-ups were done and cleared (by this process's next script, the late
    # copy's start): a late copy of the turn redoes nothing.
    assert await run_turn(svc, recorder.jobs[0]) is TurnOutcome.DROPPED
    assert len(recorder.jobs) == 3
    assert await client.hget(svc.store.keys.agent(run_id, root.id), "followup_jobs") is None


async def test_a_final_save_whose_reply_was_lost_still_tells_the_parent(
    make_services, proxied, monkeypatch
) -> None:
    proxy, client = proxied
    model = (
        ScriptedModel()
        .script(
            "O",
            Reply(
                calls=(
                    call("create_agent", {"name": "A", "role": "member", "purpose": "a"}),
                    call("wait_for_messages"),
                )
            ),
        )
        .script("A", Reply(calls=(call("finish", {"result": "done"}),)))
    )
    svc = make_services(make_settings(), model, redis=client, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "t", root)
    assert await run_turn(svc, recorder.jobs[0]) is TurnOutcome.WAITING
    child = await svc.store.resolve_name(run_id, "A")
    assert child is not None
    assert recorder.of(root.id) == [TurnJob(run_id=run_id, agent_id=root.id, seq=0)]

    # A's end (a member's: no run change) is one script, its parent's wake-up claimed in
    # it: the script's reply is lost.
    _arm_at_after_tools(monkeypatch, proxy, _SCRIPT_SHA)
    outcome = await run_turn(svc, TurnJob(run_id=run_id, agent_id=child, seq=0))

    assert proxy.dropped == 1
    assert outcome is TurnOutcome.ENDED  # before: DROPPED, and O was never woken
    assert recorder.of(root.id)[1:] == [TurnJob(run_id=run_id, agent_id=root.id, seq=1)]
    finished = [e for e in await _events(svc, run_id) if isinstance(e, AgentFinished)]
    assert [e.agent_id for e in finished] == [child], "saved once"
    assert await client.xlen(svc.store.keys.inbox(run_id, root.id)) == 1, "one result sent"


async def test_a_run_change_whose_reply_was_lost_is_applied_once_and_reported_done(
    make_services, proxied
) -> None:
    proxy, client = proxied
    svc = make_services(make_settings(), ScriptedModel(), redis=client, start=False)
    svc.scheduler = RecordingScheduler()
    run_id = await start_run(svc, "t", AgentSpec(name="O", role="orchestrator", tools=TOOLS))

    proxy.arm(_UPDATE_SHA)
    done = RunFinished(run_id=run_id, status=RunStatus.CANCELLED, error="stopped")
    step = await svc.store.transition_run(run_id, RunStatus.CANCELLED, by="ana", events=[done])

    assert proxy.dropped == 1
    # Before: the retry found the run cancelled already and refused "cancelled → cancelled",
    # so its caller skipped what follows (stopping the agents, starting an approved run).
    assert step.ok, step.reason
    assert (await svc.store.get_run(run_id)).status is RunStatus.CANCELLED
    finished = [e for e in await _events(svc, run_id) if isinstance(e, RunFinished)]
    assert len(finished) == 1, "applied once"


async def test_a_runs_end_whose_reply_was_lost_ends_it_once(
    make_services, proxied, monkeypatch
) -> None:
    proxy, client = proxied
    model = ScriptedModel().script("S", Reply(calls=(call("finish", {"result": "done"}),)))
    svc = make_services(make_settings(), model, redis=client, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    run_id = await start_run(svc, "t", AgentSpec(name="S", role="solo", tools=("finish",)))

    # The root's end: one guarded script (its start read the run), whose reply is lost.
    _arm_at_after_tools(monkeypatch, proxy, _SCRIPT_SHA)
    outcome = await run_turn(svc, recorder.jobs[0])

    assert proxy.dropped == 1
    assert outcome is TurnOutcome.ENDED
    assert (await svc.store.get_run(run_id)).status is RunStatus.COMPLETED
    finished = [e for e in await _events(svc, run_id) if isinstance(e, RunFinished)]
    assert len(finished) == 1, "ended once"
