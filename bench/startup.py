"""How fast Caramba's processes start, and how big they are once started, with an
OpenAI-compatible model configured (``openai/gpt-4o-mini``, the direct client):

    .venv/bin/python bench/startup.py [--runs 3] [--no-bots]

Each process is spawned for real and timed from its spawn to the log line saying it is
ready; its resident memory is read then; medians of ``--runs``.

- start_s / rss_mb: a turn worker, ``python -m tasks.worker --concurrency=4`` (as
  ``caramba worker`` starts each of its workers), to Celery's `` ready.`` line: imports,
  settings, the Redis check, the Celery worker's boot and the turn runtime (services,
  MCP tools, the background loops).
- import_s: ``import tasks.worker`` alone in a fresh interpreter.
- keeper_s / keeper_rss_mb: the host's call keeper (``python -m
  core.process.keeper_main``) to its ``ready.`` line.
- cli_s / supervisor_rss_mb: ``caramba worker --processes 1`` until its worker and its
  call keeper are both ready; the RSS of the supervisor process itself.
- slack_s, discord_s, web_s (and ``…_rss_mb``): ``caramba slack`` to "the Slack bot is
  up" (its ``auth.test`` answered by a stub in the bench), ``caramba discord`` to "the
  Discord bot connects" (its services built, before the gateway), ``caramba web`` to
  "web chat threads taken up"; each publishing to the Celery workers (none running).
- heavy: the heavy modules (litellm, onnxruntime, tokenizers, mcp, playwright) any of
  those processes held once ready, ``-`` if none: each is run through a probe that
  writes them to a file at its ready line.

Real Redis on 127.0.0.1:6379 (db 15, a key prefix and queue of the bench's own, removed
afterwards); no model, Slack or Discord is called. Last line: ``bench startup:
start_s=… rss_mb=… import_s=… keeper_s=… keeper_rss_mb=… cli_s=… supervisor_rss_mb=…
slack_s=… … heavy=…``.
"""

from __future__ import annotations

import argparse
import http.server
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from redis import Redis

from core.config import PROJECT_ROOT

URL = "redis://127.0.0.1:6379/15"
MODEL = "openai/gpt-4o-mini"
HEAVY = ("litellm", "onnxruntime", "tokenizers", "mcp", "playwright")
_TIMEOUT_S = 60.0
_NOWHERE = "http://127.0.0.1:9/"  # nothing listens: refused at once

# Runs ``target`` (a module run as __main__, or bots.cli's main) in the process; once the
# logger ``logger`` says ``ready``, appends the heavy modules it holds to a file. The
# handler sits on that logger, not the root (which logging.basicConfig(force) resets).
_PROBE = """
import logging, os, sys

class Probe(logging.Handler):
    def emit(self, record):
        if {ready!r} in record.getMessage():
            heavy = [m for m in {heavy!r} if m in sys.modules]
            with open(os.environ["CARAMBA_BENCH_MODULES"], "a") as f:
                f.write(" ".join(heavy) + "\\n")

logging.getLogger({logger!r}).addHandler(Probe())
sys.argv = {argv!r}
if {cli!r}:
    from bots.cli import main
    main()
else:
    import runpy
    runpy.run_module({target!r}, run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class Start:
    """One process to start: its probe's target, ready line and the logger saying it."""

    name: str
    target: str
    argv: tuple[str, ...]
    logger: str
    ready: str
    count: int = 1  # how many ready lines (the CLI: its worker and its keeper)

    def command(self) -> list[str]:
        argv = [a.replace("{port}", str(_free_port())) for a in self.argv]
        code = _PROBE.format(
            ready=self.ready,
            heavy=HEAVY,
            logger=self.logger,
            argv=[self.target, *argv],
            cli=self.target == "caramba",
            target=self.target,
        )
        return [sys.executable, "-c", code]


WORKER = Start("worker", "tasks.worker", ("--concurrency=4",), "celery.apps.worker", " ready.")
KEEPER = Start("keeper", "core.process.keeper_main", (), "core.process.keeper", " ready.")
# The supervisor's children are plain workers and keepers: their ready lines are counted.
CLI = Start("cli", "caramba", ("worker", "--processes=1"), "-", " ready.", count=2)
SLACK = Start("slack", "caramba", ("slack", "--port={port}"), "bots.slack.main", "Slack bot is up")
DISCORD = Start("discord", "caramba", ("discord",), "bots.discord.main", "Discord bot connects")
WEB = Start(
    "web", "caramba", ("web", "--port={port}"), "bots.web.main", "web chat threads taken up"
)


class _SlackAuth(http.server.BaseHTTPRequestHandler):
    """Slack's ``auth.test`` accepting the bench's token (the bot checks it at start)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"ok": true, "user": "bench", "team": "bench", "user_id": "U1"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _slack_api() -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlackAuth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bench_env(prefix: str, modules: Path, slack_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(PROJECT_ROOT),
        PYTHONUNBUFFERED="1",
        CARAMBA_REDIS__URL=URL,
        CARAMBA_REDIS__KEY_PREFIX=prefix,
        CARAMBA_CELERY__QUEUE=f"{prefix}-turns",
        CARAMBA_LLM__MODEL=MODEL,
        CARAMBA_LLM__CLIENT=os.environ.get("BENCH_CLIENT", "openai_compat"),
        CARAMBA_LLM__API_BASE=f"{_NOWHERE}v1",  # never called
        CARAMBA_SLACK__API_URL=slack_url,
        CARAMBA_BENCH_MODULES=str(modules),
        SLACK_BOT_TOKEN="xoxb-bench",
        SLACK_SIGNING_SECRET="bench",
        DISCORD_BOT_TOKEN="bench.discord.token",
    )
    env.setdefault("OPENAI_API_KEY", "sk-bench")
    return env


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_once(start: Start, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning ``start`` to its ready line(s), and its RSS then."""
    with tempfile.NamedTemporaryFile(prefix="caramba-start-", suffix=".log") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(start.command(), env=env, cwd=PROJECT_ROOT, stdout=out, stderr=out)
        try:
            path = Path(out.name)
            while path.read_text(errors="replace").count(start.ready) < start.count:
                if proc.poll() is not None or time.perf_counter() - t0 > _TIMEOUT_S:
                    raise SystemExit(f"{start.name} did not start:\n{path.read_text()[-3000:]}")
                time.sleep(0.005)
            return time.perf_counter() - t0, _rss_mb(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def import_once(env: dict[str, str]) -> float:
    code = "import time; t = time.perf_counter(); import tasks.worker; "
    code += "print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    return float(out.stdout.strip())


def _clean(prefix: str) -> None:
    client = Redis.from_url(URL)
    keys = list(client.scan_iter(match=f"*{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


def main(runs: int, bots: bool) -> None:
    prefix = f"bench-start-{uuid.uuid4().hex[:6]}"
    modules = Path(tempfile.mkstemp(prefix="caramba-modules-")[1])
    slack = _slack_api()
    env = bench_env(prefix, modules, f"http://127.0.0.1:{slack.server_port}/api/")
    starts = [WORKER, KEEPER, CLI] + ([SLACK, DISCORD, WEB] if bots else [])
    figures: dict[str, tuple[float, float]] = {}
    try:
        imports = [import_once(env) for _ in range(runs)]
        for start in starts:
            took = [start_once(start, env) for _ in range(runs)]
            figures[start.name] = (
                statistics.median(s for s, _ in took),
                statistics.median(r for _, r in took),
            )
            print(f"{start.name}: " + ", ".join(f"{s:.2f} s {r:.0f} MB" for s, r in took))
        heavy = sorted({m for line in modules.read_text().split() for m in line.split()})
    finally:
        slack.shutdown()
        modules.unlink(missing_ok=True)
        _clean(prefix)
    (start_s, rss), (keeper_s, keeper_rss) = figures.pop("worker"), figures.pop("keeper")
    cli_s, supervisor_rss = figures.pop("cli")
    line = (
        f"bench startup: start_s={start_s:.2f} rss_mb={rss:.0f} "
        f"import_s={statistics.median(imports):.2f} keeper_s={keeper_s:.2f} "
        f"keeper_rss_mb={keeper_rss:.0f} cli_s={cli_s:.2f} supervisor_rss_mb={supervisor_rss:.0f}"
    )
    for name, (s, r) in figures.items():
        line += f" {name}_s={s:.2f} {name}_rss_mb={r:.0f}"
    print(f"{line} heavy={','.join(heavy) or '-'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-bots", action="store_true", help="only the worker's processes")
    args = parser.parse_args()
    main(args.runs, not args.no_bots)
