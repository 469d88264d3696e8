"""Slack HTTP acknowledgement latency under a burst of mentions.

The bot served by uvicorn over real HTTP (signed requests), a local fake of the Slack Web
API, real Redis (127.0.0.1:6379, db 15, a unique key prefix removed afterwards), the
inline scheduler and a scripted model that plans instantly. ``--mentions`` app_mention
events are sent evenly over ``--window`` seconds; the acknowledgement latency is the HTTP
round trip of each (Slack wants it within 3 s); then every proposal card must be posted.

    .venv/bin/python bench/slack_ack.py [--mentions 200] [--window 10]

Last line: ``bench slack_ack: mentions=… window_s=… ack_p50_ms=… ack_p99_ms=… cards_posted=…``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
import uvicorn
from redis.asyncio import Redis
from slack_sdk.signature import SignatureVerifier

from bots.slack.app import SlackBot
from bots.slack.secrets import SlackSecrets
from bots.slack.server import EVENTS_PATH, asgi_app
from core.config import load_settings
from core.llm.scripted import Reply, ScriptedModel
from core.runtime import build_services
from core.scheduler.inline import InlineScheduler
from core.turn import run_turn
from tests.fakes.slack_api import FakeSlackAPI
from tests.planning_helpers import ROUTE_PLAN, as_json, design, prompt_writer

URL = "redis://127.0.0.1:6379/15"
SECRET = "bench-secret"


def responder(request: Any) -> Reply:
    if request.agent_name == "router":
        return ROUTE_PLAN
    if request.agent_name == "planner":
        return as_json(design())
    return prompt_writer(request)


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


async def main(mentions: int, window_s: float) -> None:
    prefix = f"bench-slack-{uuid.uuid4().hex[:8]}"
    slack = await FakeSlackAPI().start()
    settings = load_settings(
        redis={"url": URL, "key_prefix": prefix},
        planning={"reflection_rounds": 0},
        slack={"api_url": slack.url},
    )
    redis = Redis.from_url(URL, decode_responses=True)
    scheduler = InlineScheduler(settings.scheduler.inline_concurrency)
    svc = build_services(settings, scheduler, llm=ScriptedModel(responder=responder), redis=redis)
    scheduler.start(lambda job: run_turn(svc, job))
    bot = SlackBot(svc, SlackSecrets(bot_token="xoxb-bench", signing_secret=SECRET))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(asgi_app(bot), log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
        await asyncio.sleep(0.01)
    # Slack is another machine: the mentions are sent from their own thread and event
    # loop, so the client's work does not queue behind the bot's on the measured loop.
    latencies = await asyncio.to_thread(
        lambda: asyncio.run(send_mentions(port, prefix, mentions, window_s))
    )

    def cards() -> int:
        return sum(1 for c in slack.of("chat.postMessage") if c.get("blocks"))

    deadline = time.monotonic() + 120
    while cards() < mentions and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    await bot.drain()
    posted = cards()
    server.should_exit = True
    await serving
    sock.close()
    await scheduler.stop()
    keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=1000)]
    if keys:
        await redis.delete(*keys)
    await redis.aclose()
    await slack.stop()
    print(f"mean ack {statistics.mean(latencies):.1f} ms, max {max(latencies):.1f} ms")
    print(
        f"bench slack_ack: mentions={mentions} window_s={window_s:g} "
        f"ack_p50_ms={pct(latencies, 0.5):.1f} ack_p99_ms={pct(latencies, 0.99):.1f} "
        f"cards_posted={posted}"
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mentions", type=int, default=200)
    parser.add_argument("--window", type=float, default=10.0)
    args = parser.parse_args()
    asyncio.run(main(args.mentions, args.window))
