"""Durable under chaos: runs of agents that talk to each other while their worker
processes are killed (SIGKILL) and restarted, or while Redis restarts.

    .venv/bin/python bench/chaos.py [--runs 20] [--seed 12] [--kill-min-s 1] [--kill-max-s 4]
                                    [--victims mixed|ready|running|committing|any|S,S…]
                                    [--victim-wait-s 20]
                                    [--chaos-s 60] [--deadline-s S] [--latency-ms 500]
                                    [--kills N] [--no-control] [--no-keeper] [--short-timers]
                                    [--logs DIR]
    .venv/bin/python bench/chaos.py --redis-restart [--redis-restarts 2]

The production path with the default config (config.toml): real ``python -m
tasks.worker`` processes (two, 32 turn slots each), one call keeper process (``python -m
core.process.keeper_main``, as ``caramba worker`` starts it beside its workers:
``llm.keeper`` is on by default, the turns' model calls are made there, so an answer in
flight outlives a killed worker; it is not a worker and never killed; ``--no-keeper``: the
workers call the model themselves), real Redis (db 14 of 127.0.0.1:6379 under a key prefix of
the bench's, removed afterwards), litellm against the OpenAI-compatible fake
(tests/fakes/llm_server.py) at ``--latency-ms``. Only what ties the bench to the fake is
set (the model, its address, a short retry back-off, the library's ``hashing`` embedder in
a temporary folder); every timer is production's: the broker's one-hour visibility
timeout, the turn ledger's lease, the watchdog, the intents' claim. ``--short-timers``:
the bench's first variant (a 3 s visibility timeout, chains of 4 turns / 1 s, intents
claimed after 2 s, the background loop every 0.1 s).

Each run is a designed cohort proposed and approved through core
(``propose_run``/``approve_run``): an Orchestrator and two members, Alpha and Beta, on
one team. The fake plays each agent like a model would, from the request alone (its
system prompt, the messages, the tools offered): the Orchestrator posts to the chat and
waits; each member calculates its product and exchanges ``ROUNDS`` messages with the
other (``send_message``, ``wait_for_messages``: it sends its next one only after hearing
the other's last), then posts its answer to the chat and finishes with it; the
Orchestrator finishes with both results once both members reported. Runs start one
every ``--stagger-s`` (default ``--chaos-s`` / ``--runs``: 3 s, 15 s with ``--chaos-s 300``;
1 s in the control), so that the kills land on runs all through the chaos and a run meets
the timers of the kills before it.

Chaos: every 1–4 s (``random.Random(seed)``) a worker is killed with SIGKILL and a new one
started at once in its place. ``--victims`` chooses the state the killed worker is in
(bench/chaos_victims.py; the kill waits until a worker is in it): ``idle`` (announced
ready and idle — mostly a replacement that just came up and has not taken a message yet),
``running`` (a model call of its turns outstanding at the keeper, or without the keeper a
Celery task in flight), ``committing`` (the worker whose call the keeper has just
answered, killed within a few ms while it applies and saves the turn), ``mixed`` (the
default: each kill draws one of the three; the details line counts them in
``kills_by_state``), ``ready`` (any worker that announced it is ready, whatever it is
doing: a crash loop, as a worker takes 3–5 s to start here), ``any`` (either worker, even
one starting), or states in turn (``running,committing``: tests/integration/test_chaos.py).
A kill that finds no worker in its state within ``--victim-wait-s`` is missed (the details
line counts ``missed_kills`` by state) and the chaos goes on: a picker gone blind shows
there, not as a chaos with no kills. The chaos
stops once every run ended, or ``--chaos-s`` after the first run started, or after
``--kills`` kills. The control phase is the same 20 runs with no kills (printed first);
``--no-control`` skips it.

Stuck is decided honestly: after the chaos the bench waits until every run ended, or for a
deadline of twice the longest chain of recovery timers a turn can meet after the last kill
(170 s with the default config: a replacement worker's start, the ledger lease
``celery.lease_s``, the watchdog's period and ``stall_periods`` × ``stall_period_s``, the
intents' ``intent_claim_idle_s``, the keeper's ``keeper_claim_idle_s``; ``--deadline-s``
overrides it). A run not ended then was not merely waiting on a timer: nothing was going to
end it. The line ``…: the chaos ended C s in; the last runs ended +X s, +Y s, +Z s from
then; N not ended D s after it`` (negative: during the chaos) shows how close the last runs
came to the deadline.

The figures (read from Redis and from the fake's request log once the workers stopped):

- ``completed``: runs whose status is ``completed`` with the expected result (both
  members' products). A run that ended otherwise counts in ``failed`` (details line).
- ``stuck``: runs not ended (status not completed, failed, cancelled or rejected) at the
  deadline.
- ``lost_messages``: distinct messages sent (``MessageSent`` events) that were never
  consumed: in the run's dead-letter stream ``{prefix}:run:{run}:dead``, or still unread
  or unacknowledged (pending) by a group that should read them (an inbox's owner; every
  reader but the sender on a team or broadcast topic), or in no stream at all.
- ``duplicate_effects``: chat posts carried out more than once: over the ``ChatPosted``
  events, counted by idempotency key, the sum of (count − 1). (``missing_effects`` on
  the details line: ``post_to_chat`` calls of saved turns that never became a post.)
- ``turns``: turns applied with a model answer: ``LLMCalled`` events (one per saved turn
  that called the model; ``double_applied`` on the details line counts an
  (agent, seq) saved more than once).
- ``extra_llm_calls``: chat-completion requests the fake received for this phase's runs
  (requests whose system prompt names the phase's tag) minus ``turns``: model calls
  whose answer no saved turn kept — turns killed after asking the model, turns run twice
  at once (a broker redelivery after the visibility timeout), retries.
- ``kills``: SIGKILLs sent to worker processes.
- ``reasks_in_flight_at_kill`` / ``reasks_other`` (details line): the extra calls by cause
  (the turn's earlier request was in flight when a worker was killed, or not).

Each phase's last line is ``bench chaos: runs=… completed=… stuck=… lost_messages=…
duplicate_effects=… extra_llm_calls=… turns=… kills=…`` (the control's, before it, is
``bench chaos_control: …``).

``--redis-restart``: no kills; the two workers run standalone against a redis-server of
the bench's own on a free port, persistent (``--appendonly yes --appendfsync always``,
no RDB, in a temporary folder), restarted ``--redis-restarts`` times (SIGTERM, 1 s down,
started again on the same port and data) between run starts. Last line
``bench chaos_redis: runs=… completed=… workers_alive=…`` (workers_alive: worker
processes still running at the end, of the two started).

Worker logs: the WARNING/ERROR lines (and exception lines) of every worker process (and
of the keeper),
grouped with ids and numbers masked, are printed before the figures; ``--logs DIR``
keeps the whole logs.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bench.chaos_victims import MODES, Victims, parse_mode, ready
from core.config import Settings, load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services, connect_redis
from core.runs.control import approve_run, propose_run
from core.state.keys import Keys
from core.types import AgentSpec
from core.types.cohort import Cohort
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.integration.processes import Process, RedisServer, worker_env

if TYPE_CHECKING:
    from celery import Celery

    from core.services import Services

URL = "redis://127.0.0.1:6379/14"
# As in bench/throughput.py: litellm's own HTTP handler for the OpenAI wire format.
MODEL = os.environ.get("CARAMBA_BENCH_MODEL", "hosted_vllm/fake-model")
# --short-timers: the bench's first variant (as tests/integration/test_worker_crash.py was).
SHORT_TIMERS = {
    "celery__visibility_timeout_s": "3",
    "celery__turn_timeout_s": "20",
    "celery__chain_turns": "4",
    "celery__chain_s": "1",
    "scheduler__intent_claim_idle_s": "2",
    "scheduler__background_interval_s": "0.1",
}
MEMBERS = {"Alpha": 7, "Beta": 9}  # name → the factor of its product
ROUNDS = 2  # messages each member sends the other
ORCHESTRATOR_TOOLS = ("post_to_chat", "send_message", "roster", "wait_for_messages", "finish")
MEMBER_TOOLS = ("calculate", *ORCHESTRATOR_TOOLS)
_ENDED = frozenset({"completed", "failed", "cancelled", "rejected"})


# --- the model: each agent played from its request ----------------------------------------

_NAME = re.compile(r"You are (.+?), ")
_PEER = re.compile(r"Your peer is (\w+)\.")
_EXPRESSION = re.compile(r"Compute (\S+) with calculate")
_ROUNDS = re.compile(r"exchange (\d+) messages")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _calls(messages: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """The agent's earlier tool calls: (call id, tool, arguments)."""
    out = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for c in m.get("tool_calls") or ():
            try:
                args = json.loads(c["function"].get("arguments") or "{}")
            except json.JSONDecodeError:
                args = {}
            out.append((c.get("id", ""), c["function"]["name"], args))
    return out


def _incoming(messages: list[dict[str, Any]], prefix: str) -> list[str]:
    """Bodies of the delivered messages whose header starts with ``prefix``."""
    return [
        _text(m).split("\n", 1)[1] if "\n" in _text(m) else ""
        for m in messages
        if m.get("role") == "user" and _text(m).startswith(prefix)
    ]


def respond(body: dict[str, Any]) -> FakeReply:
    """The fake model: the next tool calls of the agent this request is for."""
    messages = body["messages"]
    system = _text(messages[0])
    tools = {t["function"]["name"] for t in body.get("tools") or ()}
    found = _NAME.search(system)
    name = found.group(1) if found else "?"
    peer = _PEER.search(system)
    if peer is None:
        return _orchestrator(messages, tools)
    expression, rounds = _EXPRESSION.search(system), _ROUNDS.search(system)
    assert expression and rounds, system[:300]
    return _member(name, peer.group(1), expression.group(1), int(rounds.group(1)), messages, tools)


def _orchestrator(messages: list[dict[str, Any]], tools: set[str]) -> FakeReply:
    results = _incoming(messages, "[Result from")
    if len(results) >= len(MEMBERS):
        return FakeReply(tool_calls=[("finish", {"result": " | ".join(sorted(results))})])
    wait: tuple[str, dict[str, Any]] = ("wait_for_messages", {})
    if not _calls(messages) and "post_to_chat" in tools:
        kickoff = f"Orchestrator: {' and '.join(MEMBERS)} are on it."
        return FakeReply(tool_calls=[("post_to_chat", {"text": kickoff}), wait])
    return FakeReply(tool_calls=[wait])


def _member(
    name: str,
    peer: str,
    expression: str,
    rounds: int,
    messages: list[dict[str, Any]],
    tools: set[str],
) -> FakeReply:
    calls = _calls(messages)
    sent = sum(tool == "send_message" and args.get("to") == peer for _, tool, args in calls)
    heard = len(_incoming(messages, f"[Message from {peer} "))
    calculated = {cid for cid, tool, _ in calls if tool == "calculate"}
    answer = next(
        (
            _text(m)
            for m in messages
            if m.get("role") == "tool" and m.get("tool_call_id") in calculated
        ),
        None,
    )
    out: list[tuple[str, dict[str, Any] | str]] = []
    if not calls:
        out.append(("calculate", {"expression": expression}))
    if sent < rounds and heard >= sent:
        note = f"{name} to {peer}, round {sent + 1}: I am computing {expression}."
        out.append(("send_message", {"to": peer, "body": note}))
        sent += 1
    if sent >= rounds and heard >= rounds and answer is not None:
        if "post_to_chat" in tools:
            out.append(("post_to_chat", {"text": f"{name}: {answer}"}))
        out.append(("finish", {"result": f"{name}: {answer}"}))
    elif heard < sent:
        out.append(("wait_for_messages", {}))
    # else: nothing to wait for (the answer comes with the next turn, at once)
    return FakeReply(tool_calls=out)


def design(tag: str, n: int, rounds: int = ROUNDS) -> tuple[str, Cohort, str]:
    """Run ``n``'s task, its cohort, and the result it must end with."""
    task = (
        f"[{tag} #{n}] Alpha computes {n}*7 and Beta {n}*9; they compare notes "
        f"({rounds} messages each way), and the orchestrator reports both products."
    )
    root = AgentSpec(
        name="Orchestrator",
        role="orchestrator",
        tools=ORCHESTRATOR_TOOLS,
        description="Wait for both members' results, then finish with both.",
    )
    team = f"team-pair-{uuid.uuid4().hex[:6]}"
    members = [
        AgentSpec(
            name=member,
            role="member",
            parent_id=root.id,
            team_id=team,
            tools=MEMBER_TOOLS,
            description=(
                f"Compute {n}*{factor} with calculate, exchange {rounds} messages with your "
                f"peer, post your answer to the chat and finish with it. "
                f"Your peer is {next(m for m in MEMBERS if m != member)}."
            ),
        )
        for member, factor in MEMBERS.items()
    ]
    expected = " | ".join(sorted(f"{m}: {n}*{f} = {n * f}" for m, f in MEMBERS.items()))
    return task, Cohort(task=task, agents=(root, *members)), expected


# --- configuration and figures ----------------------------------------------------------------


@dataclass
class ChaosConfig:
    name: str = "chaos"
    runs: int = 20
    seed: int = 12
    kill_min_s: float = 1.0
    kill_max_s: float = 4.0
    latency_ms: float = 500
    # At most this many kills (None: no limit; 0: no chaos, the control).
    kills: int | None = None
    # The state of the worker each kill hits (bench/chaos_victims.py): "mixed" draws among
    # "idle", "running" (a model call outstanding), "committing" (an answer just
    # in); "any": either worker, even one still starting; "running,committing": those in
    # turn.
    victims: str = "mixed"
    # How long a kill waits for a worker in its state before it is missed (counted).
    victim_wait_s: float = 20.0
    stagger_s: float = 1.0
    chaos_s: float = 60.0
    # After the chaos, how long the runs may take to end (None: the recovery timers').
    deadline_s: float | None = None
    # The bench's first variant's short timers (SHORT_TIMERS) instead of production's.
    short_timers: bool = False
    # After the runs: how long intents still pending may take to be processed.
    settle_s: float = 10.0
    workers: int = 2
    concurrency: int = 32
    # One call keeper process beside the workers, and llm.keeper on for them.
    keeper: bool = True
    redis_url: str = URL
    # With a RedisServer of our own: how often it is restarted between run starts.
    redis_restarts: int = 0
    log_dir: Path | None = None


@dataclass
class Report:
    name: str
    runs: int
    completed: int = 0
    stuck: int = 0
    failed: int = 0
    messages_sent: int = 0
    lost_messages: int = 0
    dead_letters: int = 0
    undrained: int = 0
    duplicate_sends: int = 0
    posts: int = 0
    duplicate_effects: int = 0
    missing_effects: int = 0
    llm_requests: int = 0
    turns: int = 0
    double_applied: int = 0
    extra_llm_calls: int = 0
    kills: int = 0
    kills_ready: int = 0  # of them, kills of a worker that had announced it was ready
    kills_by_state: Counter[str] = field(default_factory=Counter)
    # Kills given up because no worker was in the state drawn for victim_wait_s, by state.
    missed_kills: Counter[str] = field(default_factory=Counter)
    deadline_s: float = 0.0  # the calm the runs were given to end
    launched: int = 0  # runs proposed and approved so far (a disruption may wait for all)
    # Seconds after the phase's start at which each run was first seen ended, and the chaos.
    ended_at_s: dict[str, float] = field(default_factory=dict)
    chaos_ended_at_s: float = 0.0
    kill_times: list[float] = field(default_factory=list)  # time.monotonic() of each kill
    # Seconds from each kill to its replacement's " ready." (those seen ready), and how long
    # the phase had no worker ready at all (every worker killed and still starting).
    restart_s: list[float] = field(default_factory=list)
    no_worker_s: float = 0.0
    # Extra calls by cause: the turn's earlier request was in flight when a worker was
    # killed (its answer died with the worker), or not (a copy, a retry, a cache miss).
    reasks_in_flight_at_kill: int = 0
    reasks_other: int = 0
    redis_restarts: int = 0
    workers_alive: int = 0
    wall_s: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    # Why agents ended (AgentFinished reasons), the runs' error events (masked), and the
    # agents of every run that did not complete: name, status, turns applied.
    end_reasons: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    unfinished: list[str] = field(default_factory=list)
    log_lines: Counter[str] = field(default_factory=Counter)
    log_examples: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        return (
            f"bench {self.name}: runs={self.runs} completed={self.completed} stuck={self.stuck} "
            f"lost_messages={self.lost_messages} duplicate_effects={self.duplicate_effects} "
            f"extra_llm_calls={self.extra_llm_calls} turns={self.turns} kills={self.kills}"
        )

    def redis_line(self) -> str:
        return (
            f"bench {self.name}: runs={self.runs} completed={self.completed} "
            f"workers_alive={self.workers_alive}"
        )

    def details(self) -> str:
        return (
            f"{self.name}: wall_s={self.wall_s:.1f} statuses={dict(self.statuses)} "
            f"failed={self.failed} messages_sent={self.messages_sent} "
            f"dead_letters={self.dead_letters} undrained={self.undrained} "
            f"duplicate_sends={self.duplicate_sends} posts={self.posts} "
            f"missing_effects={self.missing_effects} llm_requests={self.llm_requests} "
            f"double_applied={self.double_applied} kills_ready={self.kills_ready} "
            f"kills_by_state={dict(self.kills_by_state)} "
            f"missed_kills={dict(self.missed_kills)} "
            f"redis_restarts={self.redis_restarts} "
            f"workers_alive={self.workers_alive} "
            f"reasks_in_flight_at_kill={self.reasks_in_flight_at_kill} "
            f"reasks_other={self.reasks_other}"
        )

    def endings(self) -> str:
        """When the last runs ended, counted from the end of the chaos."""
        last = sorted(self.ended_at_s.values())[-3:]
        waited = ", ".join(f"{t - self.chaos_ended_at_s:+.1f} s" for t in last) or "none"
        return (
            f"{self.name}: the chaos ended {self.chaos_ended_at_s:.1f} s in; the last runs "
            f"ended {waited} from then; {self.runs - len(self.ended_at_s)} not ended "
            f"{self.deadline_s:.0f} s after it; {self.restarts()}"
        )

    def restarts(self) -> str:
        """How long the killed workers' replacements took to be ready."""
        if not self.restart_s:
            return "no replacement ready" if self.kills else "no kills"
        times = sorted(self.restart_s)
        return (
            f"replacements ready {times[len(times) // 2]:.1f} s (median) / {times[-1]:.1f} s "
            f"(max) after their kill; no worker ready for {self.no_worker_s:.1f} s in all"
        )

    def diagnosis(self) -> str:
        out = [f"{self.name}: agents ended: {dict(self.end_reasons)}"]
        out += [f"  error event {n}×: {text}" for text, n in self.errors.most_common(10)]
        out += [f"  not completed: {run}" for run in self.unfinished]
        return "\n".join(out)

    def log_summary(self, top: int = 15) -> str:
        if not self.log_lines:
            return f"{self.name}: no WARNING/ERROR lines in the worker logs"
        out = [f"{self.name}: worker log lines (WARNING and worse, grouped):"]
        for pattern, count in self.log_lines.most_common(top):
            out.append(f"  {count:5d}× {self.log_examples[pattern][:300]}")
        if len(self.log_lines) > top:
            out.append(f"  … and {len(self.log_lines) - top} more kinds")
        return "\n".join(out)


# --- one phase --------------------------------------------------------------------------------


async def run_phase(
    server: ThreadedFakeLLMServer,
    cfg: ChaosConfig,
    redis_server: RedisServer | None = None,
    disrupt: Callable[[Report], Coroutine[Any, Any, None]] | None = None,
) -> Report:
    """``cfg.runs`` runs on ``cfg.workers`` real worker processes, with the chaos of
    ``cfg`` (kills, or restarts of ``redis_server``); the figures once they ended.
    ``disrupt``: a chaos of the caller's, started with the runs and awaited before the
    figures (a Redis failover: tests/integration/test_sentinel_failover.py)."""
    phase = _start(server, cfg, redis_server.url if redis_server is not None else cfg.redis_url)
    try:
        starting = [*phase.slots, *([phase.keeper] if phase.keeper is not None else [])]
        await asyncio.gather(*(asyncio.to_thread(p.wait_for, " ready.", 120) for p in starting))
        t0 = time.monotonic()
        launcher = asyncio.create_task(_launch(phase, redis_server))
        killer = asyncio.create_task(_chaos(phase)) if cfg.kills != 0 else None
        disrupter = asyncio.create_task(disrupt(phase.report)) if disrupt is not None else None
        await _watch(phase, t0, launcher, killer)
        if disrupter is not None:
            await disrupter
        await _finish(phase, server)
    finally:
        await _close(phase)
    return phase.report


@dataclass
class _Phase:
    """One phase's processes, clients and runs."""

    cfg: ChaosConfig
    tag: str
    env: dict[str, str]  # the workers' environment
    library_dir: str
    report: Report
    slots: list[Process]  # the current worker of each slot
    procs: list[Process]  # every worker started, killed ones included (for their logs)
    keeper: Process | None
    app: Celery
    publisher: CeleryScheduler
    redis: Redis
    svc: Services
    keys: Keys
    rng: random.Random
    victims: Victims
    run_ids: list[str] = field(default_factory=list)
    expected: dict[str, str] = field(default_factory=dict)  # run id → the result it must end with
    numbers: dict[str, int] = field(default_factory=dict)  # run id → its number ("[tag #n]")
    stop_chaos: asyncio.Event = field(default_factory=asyncio.Event)
    starting: dict[int, float] = field(default_factory=dict)  # slot → when its worker died
    ticked: float = 0.0  # the watch's last look

    @property
    def prefix(self) -> str:
        return f"bench-{self.tag}"


def _start(server: ThreadedFakeLLMServer, cfg: ChaosConfig, url: str) -> _Phase:
    """The fake set to play the agents, the worker and keeper processes started (not yet
    ready), and the bench's own clients."""
    tag = f"{cfg.name}-{uuid.uuid4().hex[:6]}"
    prefix = queue = f"bench-{tag}"
    library_dir = tempfile.mkdtemp(prefix="caramba-chaos-library-")
    server.latency_s = cfg.latency_ms / 1000
    server.set_responder(respond)
    env = worker_env(
        redis__url=url,
        redis__key_prefix=prefix,
        celery__queue=queue,
        llm__model=MODEL,
        llm__api_base=server.base_url,
        llm__backoff_initial_s="0.01",
        llm__backoff_max_s="0.05",
        library__embedder="hashing",
        library__index_dir=library_dir,
        llm__keeper="true" if cfg.keeper else "false",
        **(SHORT_TIMERS if cfg.short_timers else {}),
    )
    settings = load_settings(
        redis={"url": url, "key_prefix": prefix},
        celery={"queue": queue},
        library={"embedder": "hashing", "index_dir": library_dir},
    )
    slots = [
        Process.worker(env, f"{tag}-w{i}", concurrency=cfg.concurrency) for i in range(cfg.workers)
    ]
    keeper = (
        Process([sys.executable, "-m", "core.process.keeper_main"], env, f"{tag}-keeper")
        if cfg.keeper
        else None
    )
    app = make_app(settings)
    publisher = CeleryScheduler(app, settings)
    redis = connect_redis(settings)  # a redis+sentinel:// url too
    keys = Keys(prefix)
    rng = random.Random(cfg.seed)
    return _Phase(
        cfg=cfg,
        tag=tag,
        env=env,
        library_dir=library_dir,
        report=Report(name=cfg.name, runs=cfg.runs, deadline_s=_deadline(cfg, settings)),
        slots=slots,
        procs=list(slots),
        keeper=keeper,
        app=app,
        publisher=publisher,
        redis=redis,
        svc=build_services(settings, publisher, llm=ScriptedModel(), redis=redis),
        keys=keys,
        rng=rng,
        victims=Victims(redis, keys, slots, cfg.keeper, rng, cfg.victim_wait_s),
    )


async def _launch(phase: _Phase, redis_server: RedisServer | None) -> None:
    """Propose and approve the runs, one every ``stagger_s`` (restarting ``redis_server``
    between run starts ``redis_restarts`` times)."""
    cfg = phase.cfg
    restart_at = {
        round(cfg.runs * (j + 1) / (cfg.redis_restarts + 1)) for j in range(cfg.redis_restarts)
    }
    for i in range(cfg.runs):
        if i and cfg.stagger_s:
            await asyncio.sleep(cfg.stagger_s)
        if redis_server is not None and i in restart_at:
            await asyncio.to_thread(redis_server.restart)
            phase.report.redis_restarts += 1
        task, cohort, result = design(phase.tag, i + 1)
        run_id = await propose_run(phase.svc, task, cohort, requested_by="bench")
        phase.expected[run_id], phase.numbers[run_id] = result, i + 1
        phase.run_ids.append(run_id)
        step = await approve_run(phase.svc, run_id, "bench")
        assert step.ok, step.reason
        phase.report.launched += 1


async def _chaos(phase: _Phase) -> None:
    """Every ``kill_min_s``–``kill_max_s`` a worker in the state drawn is killed, until
    ``kills`` kills or the chaos is stopped. A pick that found no worker in that state in
    ``victim_wait_s`` is a missed kill (counted by state): the chaos goes on."""
    cfg, report, stop = phase.cfg, phase.report, phase.stop_chaos
    while cfg.kills is None or report.kills < cfg.kills:
        try:
            await asyncio.wait_for(stop.wait(), phase.rng.uniform(cfg.kill_min_s, cfg.kill_max_s))
            return
        except TimeoutError:
            pass
        state = phase.victims.state(cfg.victims)
        picked = await phase.victims.pick(state, stop)
        if picked is not None:
            _kill(phase, picked, state)
        elif stop.is_set():
            return
        else:
            report.missed_kills[state] += 1


def _kill(phase: _Phase, i: int, state: str) -> None:
    """SIGKILL the worker of slot ``i`` and start a new one in its place at once."""
    report = phase.report
    report.kills_ready += ready(phase.slots[i])
    report.kills_by_state[state] += 1
    phase.slots[i].kill()
    report.kill_times.append(time.monotonic())
    report.kills += 1
    name = f"{phase.tag}-w{i}-r{report.kills}"
    phase.slots[i] = Process.worker(phase.env, name, concurrency=phase.cfg.concurrency)
    phase.procs.append(phase.slots[i])
    phase.starting.setdefault(i, report.kill_times[-1])


async def _watch(
    phase: _Phase, t0: float, launcher: asyncio.Task[None], killer: asyncio.Task[None] | None
) -> None:
    """Until every run ended, or ``report.deadline_s`` of calm (every run launched, the
    chaos over) went by. The chaos is stopped once every run ended or ``chaos_s`` after
    ``t0``."""
    report = phase.report
    calm_since: float | None = None
    phase.ticked = t0
    while True:
        await asyncio.sleep(0.25)
        if launcher.done():
            launcher.result()  # a failed launch fails the phase
        ended_ids = await _retrying_ids(lambda: _ended(phase.redis, phase.keys, phase.run_ids))
        _restarts(phase)
        for run_id in ended_ids - report.ended_at_s.keys():
            report.ended_at_s[run_id] = time.monotonic() - t0
        everything = launcher.done() and len(ended_ids) == len(phase.run_ids)
        if killer is not None and not killer.done():
            if everything or time.monotonic() - t0 > phase.cfg.chaos_s:
                phase.stop_chaos.set()
                await killer
        chaos_over = killer is None or killer.done()
        if calm_since is None and launcher.done() and chaos_over:
            calm_since = time.monotonic()
            report.chaos_ended_at_s = calm_since - t0
        if everything or (calm_since and time.monotonic() - calm_since > report.deadline_s):
            break
    report.wall_s = time.monotonic() - t0


def _restarts(phase: _Phase) -> None:
    """Note the replacements that are ready now, and time without any worker ready."""
    now, since = time.monotonic(), phase.ticked
    phase.ticked = now
    for i, killed_at in list(phase.starting.items()):
        if ready(phase.slots[i]):
            phase.report.restart_s.append(now - killed_at)
            del phase.starting[i]
    if phase.starting and not any(ready(p) for p in phase.slots):
        phase.report.no_worker_s += now - since


async def _finish(phase: _Phase, server: ThreadedFakeLLMServer) -> None:
    """The processes stopped, then the figures measured and the logs read."""
    cfg, report = phase.cfg, phase.report
    await _settle(phase.redis, phase.keys, cfg.settle_s)
    report.workers_alive = sum(p.returncode is None for p in phase.slots)
    # Stopped (running turns finish) before counting: no model call comes after. The
    # keeper last: the workers' last turns may wait for it.
    await asyncio.gather(*(asyncio.to_thread(p.stop) for p in phase.procs))
    if phase.keeper is not None:
        await asyncio.to_thread(phase.keeper.stop)
        phase.procs.append(phase.keeper)
    asked = _asked(server.requests, phase.tag)
    await _measure(
        phase.redis, phase.keys, phase.run_ids, phase.expected, phase.numbers, asked, report
    )
    report.llm_requests = sum(asked.values())
    report.extra_llm_calls = report.llm_requests - report.turns
    _reasks(server, phase.tag, cfg.latency_ms / 1000, report)
    _scan_logs([p.output() for p in phase.procs], report)
    if cfg.log_dir is not None:
        cfg.log_dir.mkdir(parents=True, exist_ok=True)
        for p in phase.procs:
            (cfg.log_dir / f"{p.name}.log").write_text(p.output())


async def _close(phase: _Phase) -> None:
    """Every process ended and its log removed, the clients closed, the keys deleted."""
    if phase.keeper is not None and phase.keeper not in phase.procs:
        phase.procs.append(phase.keeper)
    await asyncio.gather(*(asyncio.to_thread(p.cleanup) for p in phase.procs))
    await phase.publisher.aclose()
    phase.app.close()
    await _delete_prefix(phase.redis, phase.prefix)
    await phase.redis.aclose()
    shutil.rmtree(phase.library_dir, ignore_errors=True)


def _deadline(cfg: ChaosConfig, settings: Settings) -> float:
    """How long after the chaos the runs may take to end before they count as stuck: twice
    the longest chain of recovery timers a turn can meet after the last kill, so that a
    run counted stuck was not merely waiting on a timer — a worker started in place of the
    killed one (up to 10 s here), a dead worker's turn republished once its ledger lease
    lapses (``celery.lease_s``), a turn lost everywhere resubmitted by the watchdog (its
    period plus ``stall_periods`` × ``stall_period_s``), a dead worker's intents claimed
    (``intent_claim_idle_s``), a dead keeper's call taken over (``keeper_claim_idle_s``).
    Kombu's visibility timeout (an hour) is only a backstop and not waited for."""
    if cfg.deadline_s is not None:
        return cfg.deadline_s
    sched = settings.scheduler
    chain = (
        10.0
        + settings.celery.lease_s
        + sched.watchdog_s
        + sched.stall_periods * sched.stall_period_s
        + sched.intent_claim_idle_s
        + settings.llm.keeper_claim_idle_s
    )
    return 2 * chain


async def _retrying_ids(read: Callable[[], Awaitable[set[str]]]) -> set[str]:
    """A read that waits out a Redis restart."""
    for _ in range(200):
        try:
            return await read()
        except (RedisError, OSError, ValueError):  # ValueError: a reply of another command
            await asyncio.sleep(0.25)
    return await read()


async def _ended(redis: Redis, keys: Keys, run_ids: list[str]) -> set[str]:
    """The runs that ended."""
    if not run_ids:
        return set()
    raws = await redis.mget([keys.run_head(r) for r in run_ids])
    return {
        run_id
        for run_id, raw in zip(run_ids, raws, strict=True)
        if raw and json.loads(raw).get("status") in _ENDED
    }


async def _settle(redis: Redis, keys: Keys, timeout_s: float) -> None:
    """Until every saved intent was processed (processed ones are deleted from the
    stream), up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if not await redis.xlen(keys.intents()):
                return
        except (RedisError, OSError):
            pass
        await asyncio.sleep(0.2)


async def _delete_prefix(redis: Redis, prefix: str) -> None:
    found = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=5000)]
    for i in range(0, len(found), 5000):
        await redis.delete(*found[i : i + 5000])


# --- measuring --------------------------------------------------------------------------------


def _reasks(server: ThreadedFakeLLMServer, tag: str, latency_s: float, report: Report) -> None:
    """Sort the repeated requests of a turn by cause: was the request before it in flight
    (sent, not yet answered: ``latency_s`` plus a little) when a worker was killed?"""
    times: dict[tuple[int, str, int], list[float]] = {}
    for body, at in zip(server.requests, server.request_times, strict=False):
        for key in _asked([body], tag):
            times.setdefault(key, []).append(at)
    for arrivals in times.values():
        for before in sorted(arrivals)[:-1]:
            if any(before <= k <= before + latency_s + 0.2 for k in report.kill_times):
                report.reasks_in_flight_at_kill += 1
            else:
                report.reasks_other += 1


def _asked(requests: list[dict[str, Any]], tag: str) -> Counter[tuple[int, str, int]]:
    """The model requests of this phase's runs, by (run number, agent name, turn seq): a
    turn's request carries one assistant message per turn applied before it."""
    mine = re.compile(rf"\[{re.escape(tag)} #(\d+)\]")
    out: Counter[tuple[int, str, int]] = Counter()
    for body in requests:
        messages = body.get("messages") or [{}]
        system = _text(messages[0])
        run, name = mine.search(system), _NAME.search(system)
        if run is None:
            continue
        seq = sum(m.get("role") == "assistant" for m in messages)
        out[int(run.group(1)), name.group(1) if name else "?", seq] += 1
    return out


async def _measure(
    redis: Redis,
    keys: Keys,
    run_ids: list[str],
    expected: dict[str, str],
    numbers: dict[str, int],
    asked: Counter[tuple[int, str, int]],
    report: Report,
) -> None:
    for run_id in run_ids:
        raw: Any = await redis.get(keys.run(run_id))
        run = json.loads(raw) if raw else {}
        status = run.get("status", "missing")
        report.statuses[status] += 1
        entries: Any = await redis.xrange(keys.events(run_id))
        events = [json.loads(f["event"]) for _, f in entries]
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for event in events:
            by_kind.setdefault(event["kind"], []).append(event)
        report.end_reasons.update(e["reason"] for e in by_kind.get("agent_finished", []))
        report.errors.update(_mask(e["message"]) for e in by_kind.get("error", []))
        if status == "completed" and run.get("result") == expected[run_id]:
            report.completed += 1
        else:
            if status in _ENDED:
                report.failed += 1
            else:
                report.stuck += 1
            mine = Counter({(a, q): c for (n, a, q), c in asked.items() if n == numbers[run_id]})
            report.unfinished.append(await _describe(redis, keys, run_id, status, run, mine))
        llm = by_kind.get("llm_called", [])
        report.turns += len(llm)
        applied = Counter((e["agent_id"], e["seq"]) for e in llm)
        report.double_applied += sum(c - 1 for c in applied.values())
        sent = [e["message_id"] for e in by_kind.get("message_sent", [])]
        report.messages_sent += len(set(sent))
        report.duplicate_sends += len(sent) - len(set(sent))
        dead, unconsumed = await _unconsumed(redis, keys, run_id, set(sent))
        report.dead_letters += len(dead)
        report.undrained += len(unconsumed - dead)
        report.lost_messages += len(dead | unconsumed)
        posted = Counter(e.get("key", "") for e in by_kind.get("chat_posted", []))
        report.posts += sum(posted.values())
        report.duplicate_effects += sum(c - 1 for c in posted.values())
        done = {tuple(k.split(":")[-3:-1]) for k in posted}  # key: run:agent:seq:index
        wanted = {
            (e["agent_id"], str(e["seq"]))
            for e in by_kind.get("tool_called", [])
            if e["tool"] == "post_to_chat" and e["ok"]
        }
        report.missing_effects += len(wanted - done)


async def _describe(
    redis: Redis,
    keys: Keys,
    run_id: str,
    status: str,
    run: dict[str, Any],
    asked: Counter[tuple[str, int]],
) -> str:
    """One line: the run, its status (and result), each agent's status and seq, and the
    turns started more than once (the ``deliveries`` counter a quarantine compares with
    ``limits.max_deliveries``) with how often each asked the model."""
    agents, names = [], {}
    members: Any = await redis.smembers(keys.agents(run_id))
    for agent in sorted(members):
        raw: Any = await redis.hget(keys.agent(run_id, agent), "state")
        if raw:
            state = json.loads(raw)
            names[agent] = name = state["spec"]["name"]
            end = f" {state['end_reason']}" if state.get("end_reason") else ""
            agents.append(f"{name}={state['status']}{end}@{state['seq']}")
    repeated = []
    deliveries: Any = await redis.hgetall(keys.deliveries(run_id))
    for turn, count in sorted(deliveries.items()):
        agent, _, seq = turn.rpartition(":")
        name = names.get(agent, agent)
        if int(count) > 1:
            repeated.append(f"{name}#{seq} started {count}× asked {asked[name, int(seq)]}×")
    result = run.get("result") or run.get("error") or ""
    return (
        f"{run_id} {status} [{', '.join(agents)}] {result[:100]!r}; "
        f"turns started again: {', '.join(repeated) or 'none'}"
    )


async def _unconsumed(
    redis: Redis, keys: Keys, run_id: str, sent: set[str]
) -> tuple[set[str], set[str]]:
    """Of the messages ``sent``: those dead-lettered, and those not consumed (read and
    acknowledged by every group that should read them, or in no stream at all)."""
    letters: Any = await redis.xrange(keys.dead_letters(run_id))
    dead = {json.loads(f["m"])["id"] for _, f in letters if f.get("m")} & sent
    members: Any = await redis.smembers(keys.agents(run_id))
    agents = sorted(members)
    streams = [keys.inbox(run_id, a) for a in agents] + [keys.broadcast(run_id)]
    for agent in agents:
        raw: Any = await redis.hget(keys.agent(run_id, agent), "state")
        team = json.loads(raw)["spec"].get("team_id") if raw else None
        if team and keys.team(run_id, team) not in streams:
            streams.append(keys.team(run_id, team))
    consumed: dict[str, bool] = {}
    for stream in streams:
        if not await redis.exists(stream):
            continue
        groups: dict[str, tuple[tuple[int, int], set[str]]] = {}
        infos: Any = await redis.xinfo_groups(stream)
        for g in infos:
            pending: set[str] = set()
            if g["pending"]:
                rows: Any = await redis.xpending_range(stream, g["name"], "-", "+", 100_000)
                pending = {r["message_id"] for r in rows}
            groups[g["name"]] = (_id(g["last-delivered-id"]), pending)
        entries: Any = await redis.xrange(stream)
        for entry_id, fields in entries:
            if not fields.get("m"):
                continue
            message = json.loads(fields["m"])
            readers = [g for g in groups if g != message["sender"]]
            consumed[message["id"]] = bool(readers) and all(
                _id(entry_id) <= groups[g][0] and entry_id not in groups[g][1] for g in readers
            )
    return dead, {m for m in sent if not consumed.get(m, False)}


def _id(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


_LOG_HEAD = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ ")
_SUSPICIOUS = re.compile(r" (WARNING|ERROR|CRITICAL) |^\w+(\.\w+)*(Error|Exception|Warning): ")
_MASKS = [
    (re.compile(r"\[\d+\]"), "[pid]"),
    (re.compile(r"\b(run|agt|msg|coh|team-pair)[_-][0-9a-zA-Z_-]+"), r"\1_*"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"bench-[\w-]+"), "bench-*"),
    (re.compile(r"\d+(\.\d+)?"), "N"),
]


def _mask(text: str) -> str:
    """``text`` with its ids, process ids and numbers masked (to group similar lines)."""
    for mask, repl in _MASKS:
        text = mask.sub(repl, text)
    return text[:200]


def _scan_logs(outputs: list[str], report: Report) -> None:
    for output in outputs:
        for line in output.splitlines():
            if _SUSPICIOUS.search(line):
                pattern = _mask(_LOG_HEAD.sub("", line))
                report.log_lines[pattern] += 1
                report.log_examples.setdefault(pattern, line)


# --- main -------------------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> None:
    cfg = ChaosConfig(
        runs=args.runs,
        seed=args.seed,
        kill_min_s=args.kill_min_s,
        kill_max_s=args.kill_max_s,
        latency_ms=args.latency_ms,
        kills=args.kills,
        victims=args.victims,
        victim_wait_s=args.victim_wait_s,
        # Run starts spread over the chaos, so that its kills land on runs all along.
        stagger_s=args.stagger_s if args.stagger_s is not None else args.chaos_s / args.runs,
        chaos_s=args.chaos_s,
        deadline_s=args.deadline_s,
        short_timers=args.short_timers,
        log_dir=args.logs,
        keeper=not args.no_keeper,
    )
    timers = load_settings()
    visibility = SHORT_TIMERS["celery__visibility_timeout_s"] if cfg.short_timers else None
    lines: list[str] = []
    print(
        f"model: {MODEL} (litellm) against the OpenAI-compatible fake at {cfg.latency_ms:g} ms; "
        f"{cfg.workers} workers × {cfg.concurrency} slots; visibility timeout "
        f"{visibility or timers.celery.visibility_timeout_s} s, ledger lease "
        f"{timers.celery.lease_s} s; victims {cfg.victims}; seed {cfg.seed}; call keeper "
        f"{'on' if cfg.keeper else 'off'}; stuck after {_deadline(cfg, timers):.0f} s of calm",
        flush=True,
    )
    with ThreadedFakeLLMServer() as server:
        if args.redis_restart:
            redis_server = RedisServer()
            redis_server.start()
            try:
                phase = dataclasses.replace(
                    cfg, name="chaos_redis", kills=0, redis_restarts=args.redis_restarts
                )
                report = await run_phase(server, phase, redis_server)
            finally:
                redis_server.cleanup()
            _print(report)
            lines.append(report.line())
            lines.append(report.redis_line())
        else:
            if not args.no_control and cfg.kills != 0:
                control = await run_phase(
                    server, dataclasses.replace(cfg, name="chaos_control", kills=0, stagger_s=1.0)
                )
                _print(control)
                lines.append(control.line())
            report = await run_phase(server, cfg)
            _print(report)
            lines.append(report.line())
    print("\n".join(lines))


def _print(report: Report) -> None:
    print(report.log_summary())
    print(report.endings())
    print(report.diagnosis())
    print(report.details(), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--kill-min-s", type=float, default=1.0)
    parser.add_argument("--kill-max-s", type=float, default=4.0)
    parser.add_argument("--latency-ms", type=float, default=500)
    parser.add_argument(
        "--kills", type=int, default=None, help="at most this many kills (0: none, the control)"
    )
    parser.add_argument(
        "--victims",
        type=parse_mode,
        default="mixed",
        help=f"the state of the killed workers: {', '.join(MODES)}, or states in turn "
        "(running,committing)",
    )
    parser.add_argument(
        "--victim-wait-s", type=float, default=20.0, help="a kill finding no victim is missed"
    )
    parser.add_argument("--no-control", action="store_true", help="skip the run without kills")
    parser.add_argument(
        "--no-keeper", action="store_true", help="no call keeper: workers call the model"
    )
    parser.add_argument(
        "--stagger-s", type=float, default=None, help="between run starts (chaos-s / runs)"
    )
    parser.add_argument("--chaos-s", type=float, default=60.0, help="longest chaos")
    parser.add_argument(
        "--deadline-s", type=float, default=None, help="after the chaos (default: the timers')"
    )
    parser.add_argument(
        "--short-timers", action="store_true", help="the first variant's 3 s visibility timeout…"
    )
    parser.add_argument("--redis-restart", action="store_true")
    parser.add_argument("--redis-restarts", type=int, default=2)
    parser.add_argument("--logs", type=Path, default=None, help="keep the worker logs here")
    asyncio.run(main(parser.parse_args()))
