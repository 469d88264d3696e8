"""Discord acknowledgement latency under a burst of ``/caramba`` commands, in production shape.

The bot (``CarambaBot``, discord.py 2.7) connected to the local Discord of
``tests/fakes/discord_*.py`` (gateway and REST), real Redis (127.0.0.1:6379, db 15, a unique
key prefix removed afterwards), and the requests planned by real Celery worker processes
(``--workers``) through litellm against the OpenAI-compatible HTTP fake, as in
``bench/slack_ack.py``. ``--interactions`` slash commands are sent evenly over ``--window``
seconds; the acknowledgement latency is what the fake measures for each: from its
INTERACTION_CREATE frame to the interaction callback (the bot's defer) reaching its REST
server (Discord wants it within 3 s). Then every proposal card must be posted in its
thread. The fake Discord runs in a process of its own at normal priority (its clock is
the measure); the workers and the model's fake stand for other machines: processes of
their own at nice 10, so that on a small machine they do not take the bot's CPU.

    .venv/bin/python bench/discord_ack.py [--interactions 200] [--window 10] [--workers 2]

Last line: ``bench discord_ack: interactions=… window_s=… ack_p99_ms=… cards_posted=…``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from bench.slack_ack import MODEL, OTHER_MACHINES_NICE, URL, free_port, pct, serve_llm
from bots.chat.startup import freeze_startup_objects
from bots.discord.bot import CarambaBot
from core.config import load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services, connect_redis
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.fakes.discord_api import TOKEN, FakeDiscord
from tests.integration.processes import Process, worker_env

CARD_WAIT_S = 120


def discord(conn: Connection, interactions: int, window_s: float) -> None:
    """Discord (a process of its own): serves the bot's gateway and REST calls; when told
    the bot is ready, sends the commands, waits for every card and sends back the
    acknowledgement latencies (ms; None: never acknowledged) and how many cards came."""

    async def run() -> None:
        fake = await FakeDiscord().start()
        conn.send((fake.api_url, fake.gateway_url))
        await asyncio.to_thread(conn.recv)
        # The fake is the stopwatch: a collection pausing it would count as the bot's
        # latency (real Discord has no such pauses), so none while it measures.
        gc.freeze()
        gc.disable()

        async def command(i: int) -> float | None:
            await asyncio.sleep(i * window_s / interactions)
            task = {"task": f"Compare flights number {i} to Berlin."}
            inter = await fake.slash("caramba", task, "alice")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(inter.acked.wait(), fake.interaction_deadline_s + 2)
            return inter.ack_ms

        def cards() -> int:
            def is_card(r: object) -> bool:
                return "caramba:approve:" in json.dumps(getattr(r, "json", {}).get("components"))

            return len(fake.requests("create_message", is_card))

        latencies = await asyncio.gather(*(command(i) for i in range(interactions)))
        gc.enable()
        deadline = time.monotonic() + CARD_WAIT_S
        while cards() < interactions and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        conn.send((latencies, cards()))
        await fake.stop()

    asyncio.run(run())


async def main(interactions: int, window_s: float, workers: int) -> None:
    prefix = f"bench-discord-{uuid.uuid4().hex[:8]}"
    queue = f"{prefix}-q"
    fork = multiprocessing.get_context("fork")
    llm_port = free_port()
    side, fake_side = fork.Pipe()
    children = [
        fork.Process(target=serve_llm, args=(llm_port,)),
        fork.Process(target=discord, args=(fake_side, interactions, window_s)),
    ]
    for child in children:
        child.start()
    try:
        env = worker_env(
            redis__url=URL,
            redis__key_prefix=prefix,
            celery__queue=queue,
            llm__model=MODEL,
            llm__api_base=f"http://127.0.0.1:{llm_port}/v1",
            planning__reflection_rounds="0",
            planning__library_top_k="0",
        )
        procs = [Process.worker(env, f"bench-planner{i}", concurrency=50) for i in range(workers)]
        for proc in procs:
            os.setpriority(os.PRIO_PROCESS, proc.pid, OTHER_MACHINES_NICE)
        try:
            for proc in procs:
                proc.wait_for(" ready.", timeout=120)
            latencies, posted = await _measure(prefix, queue, side)
        finally:
            for proc in procs:
                proc.stop()
    finally:
        for child in children:
            child.terminate()
            child.join()
    acked = [ms for ms in latencies if ms is not None]
    # An interaction never acknowledged counts as infinitely late.
    measured = [float("inf") if ms is None else ms for ms in latencies]
    print(f"acknowledged {len(acked)} of {len(latencies)} interactions")
    if acked:
        print(f"mean ack {statistics.mean(acked):.1f} ms, p50 {pct(acked, 0.5):.1f} ms, ", end="")
        print(f"max {max(acked):.1f} ms")
    print(
        f"bench discord_ack: interactions={interactions} window_s={window_s:g} "
        f"ack_p99_ms={pct(measured, 0.99):.1f} cards_posted={posted}"
    )


async def _measure(prefix: str, queue: str, side: Connection) -> tuple[list[float | None], int]:
    """The bot process: commands in, acknowledgement latencies and cards posted out."""
    api_url, gateway_url = await asyncio.to_thread(side.recv)
    Route.BASE = api_url
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)
    settings = load_settings(
        redis={"url": URL, "key_prefix": prefix},
        celery={"queue": queue},
        discord={"sync_commands": True, "command_guild": ""},
    )
    redis = connect_redis(settings)  # the bot's production pool (blocking, bounded)
    publisher = CeleryScheduler(make_app(settings), settings)
    svc = build_services(settings, publisher, llm=ScriptedModel(), redis=redis)
    bot = CarambaBot(svc, guild_ready_timeout=0.05)
    freeze_startup_objects()  # as caramba discord does before it connects
    running = asyncio.create_task(bot.start(TOKEN))
    try:
        while not bot.is_ready():
            if running.done():
                running.result()
            await asyncio.sleep(0.01)
        cpu = time.process_time()
        side.send("go")
        latencies, posted = await asyncio.to_thread(side.recv)
        cpu = time.process_time() - cpu
    finally:
        await bot.close()
        await running
    print(f"bot process: {cpu * 1000 / len(latencies):.1f} ms CPU per interaction (ack and card)")
    await publisher.aclose()
    keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=1000)]
    if keys:
        await redis.delete(*keys)
    await redis.aclose()
    return latencies, posted


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interactions", type=int, default=200)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2, help="planning worker processes")
    args = parser.parse_args()
    asyncio.run(main(args.interactions, args.window, args.workers))
