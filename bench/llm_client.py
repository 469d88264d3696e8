"""The CPU of one model call: the direct OpenAI-compatible client
(``core.llm.openai_compat``) against a bare aiohttp loop, on the same request.

One fake model (``tests.fakes.llm_server.ThreadedFakeLLMServer``, in this process) answers
every call with a tool call and usage; each system runs in its own process, ``--n`` calls,
``--concurrency`` at a time, and prints the CPU it spent per call (``time.process_time``:
the client's process only). Runs are interleaved (A, B, A, B, …) so the machine's noise
falls on both; the table gives min and median per system.

Systems:

- ``bare``: ``session.post(url, data=json.dumps(body).encode(), headers=…)`` and
  ``json.loads(await response.read())`` (as ``bench/peer_drivers/raw_http_driver.py``);
- ``client``: ``OpenAICompatClient.complete`` on the same request as an ``LLMRequest``;
- ``stream``: the same with ``stream=True`` (server-sent events);
- ``client@before``, ``stream@before``: those of the Caramba in ``--before DIR``.

Run: ``.venv/bin/python bench/llm_client.py [--n 2000] [--runs 5] [--before /tmp/before]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REQUEST = ROOT / "bench" / ".peers" / "raw_request.json"


def _request_body() -> dict[str, Any]:
    """A Caramba member's request as ``bench/peers.py`` kept it, or one like it."""
    if REQUEST.exists():
        return dict(json.loads(REQUEST.read_text()))
    system = "You are Member 1.1, a team member.\n" + "Do your part thoroughly. " * 60
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    messages.append({"role": "user", "content": "Your brief from Lead 1:\nwork"})
    for i in range(4):
        function = {"name": "calculate", "arguments": '{"expression": "6*7"}'}
        call = {"id": f"call_{i}", "type": "function", "function": function}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "42"})
    params = {"type": "object", "properties": {"expression": {"type": "string"}}}
    tool = {"name": "calculate", "description": "Evaluate.", "parameters": params}
    return {
        "model": "fake-model",
        "messages": messages,
        "tools": [{"type": "function", "function": tool}],
    }


async def _bare(url: str, body: dict[str, Any], n: int, concurrency: int) -> float:
    from bench.peer_drivers.raw_http_driver import bare_calls  # (the peers bench's floor)

    return await bare_calls(url, body, n, concurrency, time.process_time)


async def _client(url: str, body: dict[str, Any], n: int, concurrency: int, stream: bool) -> float:
    import os

    from core.config import LLMSettings
    from core.llm.base import LLMRequest
    from core.llm.openai_compat import OpenAICompatClient
    from core.types.chat import ChatMessage, ToolCall

    os.environ["BENCH_LLM_KEY"] = "x"
    settings = LLMSettings(model="openai/fake-model", api_base=url, api_key_env="BENCH_LLM_KEY")
    messages = []
    for m in body["messages"]:
        calls = [
            ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
            for c in m.get("tool_calls") or ()
        ]
        fields = {k: v for k, v in m.items() if k != "tool_calls"}
        messages.append(ChatMessage(**fields, tool_calls=calls))
    request = LLMRequest(
        model="openai/fake-model",
        messages=tuple(messages),
        tools=tuple(body.get("tools") or ()),
        max_tokens=body.get("max_tokens"),
        stream=stream,
    )
    client = OpenAICompatClient(settings)
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            answer = await client.complete(request)
            assert answer.tool_calls, answer

    try:
        await one()
        cpu0 = time.process_time()
        await asyncio.gather(*(one() for _ in range(n)))
        return time.process_time() - cpu0
    finally:
        await client.aclose()


def child(system: str, url: str, n: int, concurrency: int) -> None:
    body = _request_body()
    if system == "bare":
        spent = asyncio.run(_bare(url, body, n, concurrency))
    else:
        spent = asyncio.run(_client(url, body, n, concurrency, stream=system == "stream"))
    print("BENCH " + json.dumps({"cpu_ms_per_call": spent * 1000 / n}), flush=True)


def _run(system: str, url: str, opts: argparse.Namespace) -> float:
    name, _, at = system.partition("@")
    root = Path(opts.before).resolve() if at else ROOT
    cmd = [sys.executable, str(ROOT / "bench" / "llm_client.py"), "--child", name, "--url", url]
    cmd += ["--n", str(opts.n), "--concurrency", str(opts.concurrency)]
    out = subprocess.run(
        cmd, capture_output=True, text=True, check=True, cwd=root, env=_env(root)
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("BENCH "))
    return float(json.loads(line[6:])["cpu_ms_per_call"])


def _env(root: Path) -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(root)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=0.0, help="the fake's per call")
    parser.add_argument("--systems", default="bare,client,stream")
    parser.add_argument("--before", metavar="DIR", help="also measure client@before, stream@before")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        sys.path.insert(0, str(Path.cwd()))
        child(opts.child, opts.url, opts.n, opts.concurrency)
        return
    systems = [s for s in opts.systems.split(",") if s]
    if opts.before:
        systems += [f"{s}@before" for s in systems if s != "bare" and "@" not in s]
    sys.path.insert(0, str(ROOT))
    from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer

    def respond(body: dict[str, Any]) -> FakeReply:
        return FakeReply(tool_calls=[("calculate", {"expression": "6*7"})])

    found: dict[str, list[float]] = {s: [] for s in systems}
    with ThreadedFakeLLMServer(latency_s=opts.latency_ms / 1000) as server:
        server.set_responder(respond)
        for _ in range(opts.runs):
            for system in systems:
                found[system].append(_run(system, server.base_url, opts))
    print(f"{'system':<16}{'min ms/call':>12}{'median':>10}  runs (n={opts.n})")
    for system, got in found.items():
        runs = " ".join(f"{x:.3f}" for x in got)
        print(f"{system:<16}{min(got):>12.3f}{statistics.median(got):>10.3f}  {runs}")


if __name__ == "__main__":
    main()
