"""Slack HTTP acknowledgement latency under a burst of mentions, in production shape.

The bot served by uvicorn over real HTTP (signed requests), a local fake of the Slack Web
API, real Redis (127.0.0.1:6379, db 15, a unique key prefix removed afterwards), and the
requests planned by real Celery worker processes (``--workers``) through litellm against
the OpenAI-compatible HTTP fake. ``--mentions`` app_mention events are sent evenly over
``--window`` seconds; the acknowledgement latency is the HTTP round trip of each (Slack
wants it within 3 s); then every proposal card must be posted by the bot's relays. The
workers and the fakes stand for other machines: they run in processes of their own at a
lower priority (nice 10), so that on a small machine they do not take the bot's CPU.

    .venv/bin/python bench/slack_ack.py [--mentions 200] [--window 10] [--workers 2] [--no-freeze]

Last line: ``bench slack_ack: mentions=… window_s=… ack_p50_ms=… ack_p99_ms=… cards_posted=…``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import socket
import statistics
import sys
import time
import uuid
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
from slack_sdk.signature import SignatureVerifier

from bots.chat.startup import freeze_startup_objects
from bots.slack.app import SlackBot
from bots.slack.secrets import SlackSecrets
from bots.slack.server import EVENTS_PATH, served
from core.config import load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services, connect_redis
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.fakes.llm_server import FakeLLMServer, FakeReply
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.processes import Process, worker_env
from tests.planning_helpers import design

URL = "redis://127.0.0.1:6379/15"
SECRET = "bench-secret"
# litellm's own HTTP handler for OpenAI-compatible servers (cheaper than openai/...).
MODEL = "hosted_vllm/fake-model"
# The workers and the fakes stand for other machines: on this one they run at a lower
# priority, so that they take the CPU the bot leaves rather than the bot's own.
OTHER_MACHINES_NICE = 10


def responder(body: dict[str, Any]) -> FakeReply:
    """Router → plan, planner → the usual design, then the prompt drafts."""
    tools = {t["function"]["name"] for t in body.get("tools") or ()}
    if "submit_router" in tools:
        return FakeReply(tool_calls=[("submit_router", {"path": "plan", "reason": "steps"})])
    if "submit_planner" in tools:
        return FakeReply(tool_calls=[("submit_planner", design())])
    return FakeReply(content="Find the fares; finish with the three cheapest.")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_llm(port: int) -> None:
    """The OpenAI-compatible fake with the planning replies, until terminated."""
    os.nice(OTHER_MACHINES_NICE)

    async def serve() -> None:
        server = FakeLLMServer(port=port)
        server.set_responder(responder)
        await server.start()
        await asyncio.Event().wait()

    asyncio.run(serve())


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def send_mentions(port: int, prefix: str, mentions: int, window_s: float) -> list[float]:
    """POST ``mentions`` signed app_mention events evenly over ``window_s``; latencies (ms)."""
    verifier = SignatureVerifier(SECRET)
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=mentions, max_keepalive_connections=mentions)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits) as http:

        async def mention(i: int) -> None:
            await asyncio.sleep(i * window_s / mentions)
            body = json.dumps(
                {
                    "type": "event_callback",
                    "team_id": "T1",
                    "api_app_id": "A1",
                    "event_id": f"Ev{prefix}{i}",
                    "event_time": int(time.time()),
                    "event": {
                        "type": "app_mention",
                        "user": "UANA",
                        "text": f"<@UBOT> Compare flights number {i} to Berlin.",
                        "ts": f"1700000000.{i:06d}",
                        "channel": "C1",
                    },
                }
            )
            stamp = str(int(time.time()))
            headers = {
                "Content-Type": "application/json",
                "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": verifier.generate_signature(timestamp=stamp, body=body),
            }
            start = time.perf_counter()
            resp = await http.post(EVENTS_PATH, content=body, headers=headers)
            latencies.append((time.perf_counter() - start) * 1000)
            assert resp.status_code == 200, resp.text

        await asyncio.gather(*(mention(i) for i in range(mentions)))
    return latencies


def slack_api(conn: Connection, mentions: int) -> None:
    """Slack's Web API (another machine: a process of its own): serves the bot's calls;
    when asked, waits for every card and sends back how many were posted."""

    os.nice(OTHER_MACHINES_NICE)

    async def run() -> None:
        slack = await FakeSlackAPI().start()
        conn.send(slack.url)
        await asyncio.to_thread(conn.recv)

        def cards() -> int:
            return sum(1 for c in slack.of("chat.postMessage") if c.get("blocks"))

        deadline = time.monotonic() + 120
        while cards() < mentions and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        conn.send(cards())
        await slack.stop()

    asyncio.run(run())


def slack_events(conn: Connection, prefix: str, mentions: int, window_s: float) -> None:
    """Slack sending the mentions (a process of its own, so that serving the Web API
    calls does not delay its clock); sends back the latencies."""
    port = conn.recv()
    conn.send(asyncio.run(send_mentions(port, prefix, mentions, window_s)))


async def main(mentions: int, window_s: float, workers: int, freeze: bool = True) -> None:
    prefix = f"bench-slack-{uuid.uuid4().hex[:8]}"
    queue = f"{prefix}-q"
    fork = multiprocessing.get_context("fork")
    # The model's fake and Slack (API and events) run in processes of their own: in this
    # one they would take the bot's CPU (the GIL) and inflate the latency measured.
    llm_port = free_port()
    api, api_side = fork.Pipe()
    events, events_side = fork.Pipe()
    children = [
        fork.Process(target=serve_llm, args=(llm_port,)),
        fork.Process(target=slack_api, args=(api_side, mentions)),
        fork.Process(target=slack_events, args=(events_side, prefix, mentions, window_s)),
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
            latencies, posted = await _measure(prefix, queue, api, events, freeze)
        finally:
            for proc in procs:
                proc.stop()
    finally:
        for child in children:
            child.terminate()
            child.join()
    print(f"mean ack {statistics.mean(latencies):.1f} ms, max {max(latencies):.1f} ms")
    print(
        f"bench slack_ack: mentions={mentions} window_s={window_s:g} "
        f"ack_p50_ms={pct(latencies, 0.5):.1f} ack_p99_ms={pct(latencies, 0.99):.1f} "
        f"cards_posted={posted}"
    )


async def _measure(
    prefix: str, queue: str, api: Connection, events: Connection, freeze: bool
) -> tuple[list[float], int]:
    """The bot process: mentions in, acknowledgement latencies and cards posted out."""
    api_url = await asyncio.to_thread(api.recv)
    settings = load_settings(
        redis={"url": URL, "key_prefix": prefix},
        celery={"queue": queue},
        slack={"api_url": api_url},
    )
    redis = connect_redis(settings)  # the bot's production pool (blocking, bounded)
    publisher = CeleryScheduler(make_app(settings), settings)
    svc = build_services(settings, publisher, llm=ScriptedModel(), redis=redis)
    bot = SlackBot(svc, SlackSecrets(bot_token="xoxb-bench", signing_secret=SECRET))
    if freeze:
        freeze_startup_objects()  # as caramba slack does once it started
    async with served(bot) as port:
        cpu = time.process_time()
        events.send(port)
        latencies = await asyncio.to_thread(events.recv)
        api.send("count the cards")
        posted = await asyncio.to_thread(api.recv)
        cpu = time.process_time() - cpu
    print(f"bot process: {cpu * 1000 / len(latencies):.1f} ms CPU per mention (ack and card)")
    await publisher.aclose()
    keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=1000)]
    if keys:
        await redis.delete(*keys)
    await redis.aclose()
    return latencies, posted


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mentions", type=int, default=200)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2, help="planning worker processes")
    parser.add_argument(
        "--no-freeze", action="store_true", help="leave start-up objects to the collector"
    )
    args = parser.parse_args()
    asyncio.run(main(args.mentions, args.window, args.workers, freeze=not args.no_freeze))
