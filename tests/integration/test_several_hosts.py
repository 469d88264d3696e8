"""Workers and bots on several hosts, simulated: two hosts, each a process group of its
own (``caramba worker`` with its call keeper, ``caramba slack``, ``caramba discord``) in
its own working directory and temporary folder, sharing nothing but Redis (and the chat
platforms and the model, the test's fakes). Runs asked in Slack and in Discord are
planned, approved and under way when one host is killed whole (SIGKILL to its worker,
keeper and both bots); the other host carries every run to its end and every result
reaches its thread."""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import Any

import pytest
from redis.asyncio import Redis

from core.state.keys import Keys
from core.state.store import Store
from core.types.run import RunStatus
from tests.conftest import REDIS_URL
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.llm_server import ThreadedFakeLLMServer
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.hosts import (
    MCP_ADD,
    DiscordDriver,
    Host,
    SlackDriver,
    cohort_responder,
    expected,
    mcp_servers,
    until,
)
from tests.integration.processes import unique_prefix

pytestmark = pytest.mark.integration

# The model is slow enough (0.4 s a call) that every run is still under way at the kill.
LATENCY_S = 0.4


def host_settings(prefix: str, llm: ThreadedFakeLLMServer, redis_url: str) -> dict[str, str]:
    """Every host's settings: one Redis, short leases so that the survivors take over
    within seconds (turns: celery.lease_s; relays: *.relay_lease_s; model calls:
    llm.keeper_claim_idle_s)."""
    return {
        "redis__url": redis_url,
        "redis__key_prefix": prefix,
        "celery__queue": f"{prefix}-q",
        "celery__lease_s": "3",
        "celery__turn_timeout_s": "30",
        "llm__model": "openai/fake-model",
        "llm__api_base": llm.base_url,
        "llm__api_key_env": "",
        "llm__keeper_claim_idle_s": "3",
        "planning__reflection_rounds": "0",
        "planning__library_top_k": "0",
        "library__embedder": "hashing",
        "slack__relay_lease_s": "2",
        "discord__relay_lease_s": "2",
        "discord__approver_roles": '["approver"]',
        "discord__status_interval_s": "0.2",
        "discord__sync_commands": "false",
        "mcp__servers": mcp_servers(),
    }


@pytest.fixture
def fake_llm() -> Iterator[ThreadedFakeLLMServer]:
    with ThreadedFakeLLMServer(latency_s=LATENCY_S) as server:
        server.set_responder(cohort_responder)
        yield server


@contextlib.asynccontextmanager
async def chat_fakes() -> AsyncIterator[tuple[FakeSlackAPI, FakeDiscord]]:
    slack = await FakeSlackAPI().start()
    discord = await FakeDiscord().start()
    try:
        yield slack, discord
    finally:
        await discord.stop()
        await slack.stop()


@contextlib.contextmanager
def hosts(names: list[str], settings: dict[str, str]) -> Iterator[list[Host]]:
    made = [Host(name, settings, {}) for name in names]
    try:
        yield made
    finally:
        for host in made:
            host.cleanup()


async def start_hosts(
    made: list[Host], slack: FakeSlackAPI, discord: FakeDiscord, drive: SlackDriver
) -> None:
    """Start every host's worker and both bots; returns when all of them are up."""
    for host in made:
        host.start_worker()
        host.start_slack(slack)
        host.start_discord(discord)
    for host in made:
        await drive.up(host, 60)
        await until(partial(host.said, "worker", "ready"), 60, f"{host.name}'s worker")
    await until(lambda: discord.gateway.connected() == len(made), 60, "every Discord bot")


async def test_one_host_killed_the_other_carries_every_run_to_its_end(
    fake_llm: ThreadedFakeLLMServer,
) -> None:
    with unique_prefix() as prefix, hosts(["a", "b"], {}) as made:
        settings = host_settings(prefix, fake_llm, REDIS_URL)
        for host in made:
            host.env |= {f"CARAMBA_{k.upper()}": v for k, v in settings.items()}
        a, b = made
        async with chat_fakes() as (slack, discord):
            slack_side, discord_side = SlackDriver(slack), DiscordDriver(discord)
            await start_hosts(made, slack, discord, slack_side)
            assert a.dir != b.dir and a.env["TMPDIR"] != b.env["TMPDIR"]
            # Each host runs its own MCP server (started by its worker), the Scouts' tool.
            await until(lambda: bool(a.mcp_pids() and b.mcp_pids()), 30, "both MCP servers")
            assert not set(a.mcp_pids()) & set(b.mcp_pids())

            # Four runs: two asked in Slack (one through each host's bot), two in Discord
            # (both bots see the mention; one takes it).
            threads = {1: await slack_side.ask(a, 1), 2: await slack_side.ask(b, 2)}
            asked = {3: await discord_side.ask(3), 4: await discord_side.ask(4)}
            runs = {
                1: await slack_side.approve(a, threads[1]),
                2: await slack_side.approve(b, threads[2]),
            }
            for number, message in asked.items():
                runs[number] = await discord_side.approve(message)

            # Under way: an agent of every run asked the model, none has a result yet.
            def under_way() -> bool:
                agents = [r for r in fake_llm.requests if "finish" in json_tools(r)]
                return len({tag_of(r) for r in agents}) >= len(runs)

            await until(under_way, 30, "every run under way")
            killed_at = time.monotonic()
            a.kill()
            assert not any(a.alive(what) for what in a.procs)

            async def every_result() -> bool:
                slack_done = all(
                    any(expected(n) in t for t in slack_side.texts(threads[n])) for n in (1, 2)
                )
                discord_done = all(
                    any(expected(n) in t for t in discord_side.texts(asked[n])) for n in (3, 4)
                )
                return slack_done and discord_done

            try:
                await until(every_result, 75, "every result in its thread")
            except AssertionError as exc:
                seen = {n: slack_side.texts(threads[n]) for n in (1, 2)} | {
                    n: discord_side.texts(asked[n]) for n in (3, 4)
                }
                raise AssertionError(f"{exc}\n{seen}\n{b.tails()}") from None
            took = time.monotonic() - killed_at

            assert all(b.alive(what) for what in b.procs), b.tails()
            redis = Redis.from_url(REDIS_URL, decode_responses=True)
            try:
                store = Store(redis, Keys(prefix), 10_000)
                for number, run_id in runs.items():
                    run = await store.get_run(run_id)
                    assert run.status is RunStatus.COMPLETED, (number, run.error)
            finally:
                await redis.aclose()
            # Every run's Scout added through a host's MCP server.
            added = {
                tag_of(r)
                for r in fake_llm.requests
                for m in r["messages"]
                if m["role"] == "assistant"
                for c in m.get("tool_calls") or ()
                if c["function"]["name"] == MCP_ADD
            }
            assert added == {"1", "2", "3", "4"}, added
            # Each result once in its thread (the surviving bot did not post it twice).
            for n in (1, 2):
                assert sum(expected(n) in t for t in slack_side.texts(threads[n])) == 1
            for n in (3, 4):
                assert sum(expected(n) in t for t in discord_side.texts(asked[n])) == 1
            print(f"every run ended {took:.1f} s after host a was killed")


def json_tools(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or ()}


def tag_of(request: dict[str, Any]) -> str:
    found = re.search(r"tag-(\d+)", json.dumps(request["messages"]))
    return found.group(1) if found else ""
