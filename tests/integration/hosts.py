"""Caramba's processes as separate hosts, simulated on one machine: each ``Host`` is a
process group of its own (``caramba worker`` with its call keeper, ``caramba slack`` in
HTTP mode, ``caramba discord``) with its own working directory, temporary folder,
workspace and library folders, sharing nothing with the other hosts but Redis (and the
chat platforms and the model, which are the test's fakes). A host can be killed whole
with SIGKILL, like a machine that loses power.

Also the scripted model of these tests (:func:`cohort_responder`) and the chat-side
drivers (:class:`SlackDriver`, :class:`DiscordDriver`) that ask for a run, approve its
card and find its result, whichever host's bot answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from slack_sdk.signature import SignatureVerifier

from core.config import PROJECT_ROOT
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.llm_server import FakeReply
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.processes import free_port, worker_env

SLACK_SECRET = "host-secret"
SLACK_CHANNEL = "C1"
ANA = "U024BE7LH"
TAG = re.compile(r"\btag-(\d+)\b")
# The MCP server of tests/fakes/mcp_server.py, as each host starts its own (stdio).
MCP_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")
MCP_ADD = "numbers__add"


def mcp_servers() -> str:
    """``mcp.servers`` (JSON, for the environment): the fake server as ``numbers``."""
    server = {"transport": "stdio", "command": sys.executable, "args": [MCP_SERVER]}
    return json.dumps({"numbers": server})


def cohort_responder(request: dict[str, Any]) -> FakeReply:
    """The model of a planned cohort: the router plans; the planner designs an
    Orchestrator with a Scout that has ``calculate``; the prompt creator writes the
    Scout's brief (naming the request's tag); the Scout calculates tag × 7, then finishes
    with it; the Orchestrator finishes with the Scout's result."""
    tools = {t["function"]["name"] for t in request.get("tools") or ()}
    said = json.dumps(request["messages"])
    tag = TAG.search(said)
    number = tag.group(1) if tag else "0"
    if "submit_router" in tools:
        return FakeReply(tool_calls=[("submit_router", {"path": "plan", "reason": "steps"})])
    if "submit_planner" in tools:
        design = {
            "steps": [{"title": "Compute", "tools": ["calculate"]}],
            "agents": [
                {"name": "Orchestrator", "role": "orchestrator", "tools": []},
                {
                    "name": "Scout",
                    "role": "lead",
                    "parent": "Orchestrator",
                    "team": "numbers",
                    "tools": [MCP_ADD if MCP_ADD in said else "calculate"],
                    "description": "computes the number",
                },
            ],
            "teams": [{"name": "numbers", "lead": "Scout", "pattern": "fan_out"}],
        }
        return FakeReply(tool_calls=[("submit_planner", design)])
    if "finish" not in tools:
        return FakeReply(content=f"For tag-{number}: calculate {number}*7 and finish with it.")
    system = request["messages"][0]["content"]
    if "You are Scout" in system:
        answers = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        if not answers and MCP_ADD in tools:  # the host's own MCP server adds
            return FakeReply(tool_calls=[(MCP_ADD, {"a": int(number) * 6, "b": int(number)})])
        if not answers:
            return FakeReply(tool_calls=[("calculate", {"expression": f"{number}*7"})])
        value = answers[-1].rsplit("=", 1)[-1].strip()  # "3*7 = 21"
        return FakeReply(tool_calls=[("finish", {"result": f"tag-{number} is {value}"})])
    found = re.search(r"tag-(\d+) is (\d+)", said)
    if found:
        result = f"Result for tag-{found.group(1)}: {found.group(2)}"
        return FakeReply(tool_calls=[("finish", {"result": result})])
    return FakeReply(tool_calls=[("wait_for_messages", {})])


def expected(number: int) -> str:
    """The result a run asked with ``tag-<number>`` ends with."""
    return f"Result for tag-{number}: {number * 7}"


class Host:
    """One simulated machine: its processes in one process group, its own folders."""

    def __init__(self, name: str, settings: dict[str, str], secrets: dict[str, str]) -> None:
        self.name = name
        self.dir = Path(tempfile.mkdtemp(prefix=f"caramba-host-{name}-"))
        tmp = self.dir / "tmp"
        tmp.mkdir()
        self.env = worker_env(
            workspace__dir=str(self.dir / "workspaces"),
            library__index_dir=str(self.dir / "library"),
            **settings,
        )
        self.env |= secrets | {
            "TMPDIR": str(tmp),
            "CARAMBA_CONFIG": str(PROJECT_ROOT / "config.toml"),
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.slack_port = 0
        self.web_port = 0

    def _start(self, what: str, args: list[str], env: dict[str, str] | None = None) -> None:
        log = (self.dir / f"{what}.log").open("wb")
        self.procs[what] = subprocess.Popen(
            [sys.executable, *args],
            env=env or self.env,
            cwd=self.dir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group of its own: killed whole
        )
        log.close()

    def start_worker(self, concurrency: int = 8) -> None:
        """``caramba worker``: one Celery worker process and the host's call keeper."""
        self._start("worker", ["-m", "bots.cli", "worker", "-p", "1", "-c", str(concurrency)])

    def start_slack(self, slack: FakeSlackAPI) -> None:
        """``caramba slack`` in HTTP mode on a port of its own, calling the fake Web API."""
        self.slack_port = free_port()
        env = self.env | {
            "CARAMBA_SLACK__API_URL": slack.url,
            "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_SIGNING_SECRET": SLACK_SECRET,
        }
        args = ["-m", "bots.cli", "slack", "--host", "127.0.0.1", "--port", str(self.slack_port)]
        self._start("slack", args, env)

    def start_discord(self, fake: FakeDiscord) -> None:
        """``caramba discord`` pointed at the fake Discord (tests.integration.discord_host)."""
        env = self.env | {
            "DISCORD_BOT_TOKEN": fake.token,
            "FAKE_DISCORD_API": fake.api_url,
            "FAKE_DISCORD_GATEWAY": fake.gateway_url,
        }
        self._start("discord", ["-m", "tests.integration.discord_host"], env)

    def start_web(self) -> None:
        """``caramba web`` (the inspector and the web chat) on a loopback port of its own."""
        self.web_port = free_port()
        self._start("web", ["-m", "bots.cli", "web", "--host", "127.0.0.1",
                            "--port", str(self.web_port)])  # fmt: skip

    async def web_page(self, path: str, timeout_s: float = 30) -> str:
        """GET ``path`` from the host's web process once it answers; the page's text."""
        url = f"http://127.0.0.1:{self.web_port}{path}"
        pages: list[str] = []

        async def fetched() -> bool:
            if not self.alive("web"):
                raise AssertionError(f"{self.name}'s web exited:\n{self.tails()}")
            with contextlib.suppress(httpx.HTTPError):
                async with httpx.AsyncClient(timeout=10) as http:
                    reply = await http.get(url)
                if reply.status_code == 200:
                    pages.append(reply.text)
                    return True
            return False

        await until(fetched, timeout_s, f"{url} from {self.name}'s web")
        return pages[-1]

    def said(self, what: str, text: str) -> bool:
        """``text`` is in the log of the host's ``what``."""
        return text in self.output(what)

    def output(self, what: str) -> str:
        path = self.dir / f"{what}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def tails(self, lines: int = 25) -> str:
        parts = []
        for what in self.procs:
            tail = "\n".join(self.output(what).splitlines()[-lines:])
            parts.append(f"--- {self.name} {what} ---\n{tail}")
        return "\n".join(parts)

    def alive(self, what: str) -> bool:
        proc = self.procs.get(what)
        return proc is not None and proc.poll() is None

    def kill(self) -> None:
        """SIGKILL every process of the host, children and grandchildren too (the
        worker's supervisor starts its worker and keeper in sessions of their own): no
        shutdown of any kind, like a machine that loses power."""
        pids = [pid for proc in self.procs.values() for pid in _tree(proc.pid)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait(10)

    def mcp_pids(self) -> list[int]:
        """The host's MCP server processes (started by its worker)."""
        found = []
        for pid in self.pids():
            with contextlib.suppress(OSError):
                if MCP_SERVER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
        return found

    def pids(self) -> list[int]:
        """Every live process of the host."""
        return [pid for proc in self.procs.values() for pid in _tree(proc.pid)]

    def stop(self, timeout_s: float = 15) -> None:
        """SIGTERM to every group, SIGKILL to what is left after ``timeout_s``."""
        pids = self.pids()
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
        for pid in pids:  # what outlived its parent's shutdown
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait(5)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


async def until(check: Callable[[], Awaitable[bool] | bool], timeout_s: float, what: str) -> None:
    """Poll ``check`` (without blocking the loop the fakes answer on) until it says yes."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s} s")
        await asyncio.sleep(0.05)


class SlackDriver:
    """Slack's side: signed events and clicks to one host's bot; what reached the fake."""

    def __init__(self, slack: FakeSlackAPI) -> None:
        self.slack = slack
        self._event = 0

    async def _post(self, host: Host, body: str, content_type: str) -> httpx.Response:
        ts = str(int(time.time()))
        sig = SignatureVerifier(SLACK_SECRET).generate_signature(timestamp=ts, body=body)
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": sig or "",
        }
        url = f"http://127.0.0.1:{host.slack_port}/slack/events"
        async with httpx.AsyncClient(timeout=10) as http:
            return await http.post(url, content=body, headers=headers)

    async def up(self, host: Host, timeout_s: float = 30) -> None:
        async def answers() -> bool:
            if not host.alive("slack"):
                raise AssertionError(f"{host.name}'s Slack bot exited:\n{host.tails()}")
            with contextlib.suppress(httpx.HTTPError):
                reply = await self._post(
                    host,
                    json.dumps({"type": "url_verification", "challenge": "c"}),
                    "application/json",
                )
                return reply.status_code == 200
            return False

        await until(answers, timeout_s, f"{host.name}'s Slack bot up")

    async def ask(self, host: Host, number: int) -> str:
        """Mention the bot with a request tagged ``tag-<number>``; the thread's ts."""
        self._event += 1
        thread = f"1700000{number:03d}.000100"
        event = {
            "type": "app_mention",
            "text": f"<@UBOT> Compute the number of tag-{number}.",
            "ts": thread,
            "event_ts": thread,
            "user": ANA,
            "channel": SLACK_CHANNEL,
        }
        body = {
            "type": "event_callback",
            "team_id": "T1",
            "api_app_id": "A1",
            "event_id": f"Ev{number}x{self._event}",
            "event_time": int(time.time()),
            "event": event,
        }
        reply = await self._post(host, json.dumps(body), "application/json")
        assert reply.status_code == 200, reply.text
        return thread

    def card(self, thread: str) -> dict[str, Any] | None:
        for post in self.slack.of("chat.postMessage"):
            if post.get("thread_ts") == thread and "caramba_approve" in json.dumps(post):
                return post
        return None

    async def approve(self, host: Host, thread: str, timeout_s: float = 30) -> str:
        """Wait for the request's card, click Approve on ``host``'s bot; the run's id."""
        await until(lambda: self.card(thread) is not None, timeout_s, f"a card in {thread}")
        card = self.card(thread)
        assert card is not None
        run_id: str = card["blocks"][-1]["elements"][0]["value"]
        payload = {
            "type": "block_actions",
            "team": {"id": "T1"},
            "user": {"id": ANA},
            "api_app_id": "A1",
            "trigger_id": "trig",
            "container": {"type": "message", "message_ts": thread, "channel_id": SLACK_CHANNEL},
            "channel": {"id": SLACK_CHANNEL},
            "message": {"ts": thread, "thread_ts": thread, "text": "card"},
            "actions": [
                {"type": "button", "action_id": "caramba_approve", "value": run_id, "block_id": "b"}
            ],
        }
        body = "payload=" + urllib.parse.quote(json.dumps(payload))
        reply = await self._post(host, body, "application/x-www-form-urlencoded")
        assert reply.status_code == 200, reply.text
        return run_id

    def texts(self, thread: str) -> list[str]:
        return [
            p.get("text") or ""
            for p in self.slack.of("chat.postMessage")
            if p.get("thread_ts") == thread
        ]


class DiscordDriver:
    """Discord's side: mentions and clicks through the fake; what reached it."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    async def ask(self, number: int) -> dict[str, Any]:
        return await self.fake.mention("general", "alice", f"Compute the number of tag-{number}.")

    def thread(self, asked: dict[str, Any]) -> dict[str, Any] | None:
        return self.fake.thread_of(asked)

    def card(self, asked: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
        thread = self.thread(asked)
        if thread is None:
            return None
        for message in self.fake.channel_messages(thread["id"]):
            for c in _custom_ids(message):
                if c.startswith("caramba:approve:"):
                    return message, c.rsplit(":", 1)[1]
        return None

    async def approve(self, asked: dict[str, Any], timeout_s: float = 30) -> str:
        await until(lambda: self.card(asked) is not None, timeout_s, "a Discord card")
        found = self.card(asked)
        assert found is not None
        card, run_id = found
        click = await self.fake.click(card["id"], f"caramba:approve:{run_id}", "bob")
        ack = await self.fake.wait_ack(click, 10)
        assert ack.json["type"] in (5, 6), ack.json
        return run_id

    def texts(self, asked: dict[str, Any]) -> list[str]:
        thread = self.thread(asked)
        if thread is None:
            return []
        return [m.get("content") or "" for m in self.fake.channel_messages(thread["id"])]


def _tree(root: int) -> list[int]:
    """``root`` and its live descendants (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _custom_ids(message: dict[str, Any]) -> list[str]:
    from tests.fakes import discord_payloads

    every = discord_payloads.walk_components(message.get("components") or [])
    return [c["custom_id"] for c in every if c.get("custom_id")]
