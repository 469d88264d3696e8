"""The workload on Caramba: ``--mode inline`` (embedded mode's scheduler in this process,
real Redis) or ``--mode celery`` (one ``caramba worker`` process; this process only
proposes and approves runs, like a chat bot, and the worker's CPU and memory are
measured). A parent delegates with ``create_agent`` (×3) and
``wait_for_messages(all_children=True)``: its last child's end wakes it, with the 3
results (a wake-up with fewer would wait again: an extra model call the peers do not
make); agents end by calling ``finish``.
Each agent is a run's root (``flat``) or the cohort's orchestrator is (``cohort``).

Waiting for a run's end costs the measured process what the peers' ``await`` does:
inline, the turn that ends a run's root agent runs in this process, and the job handler
resolves the run's future as it returns (:class:`EndHook`; one GET of the run's head
then confirms the run ended). On Celery the worker is measured and this process waits
outside it, with one pipelined poll of the pending runs' heads (:class:`PollWaiter`).

The model client is the configured default (``llm.client``: ``openai_compat``, the
direct client, for ``hosted_vllm/…`` and any model with ``api_base``);
``CARAMBA_BENCH_CLIENT=litellm`` measures litellm instead, ``BENCH_LLM=raw`` a bare
aiohttp call in place of the model client. The driver prints which one it used."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
# BENCH_CARAMBA_ROOT: another checkout of Caramba to measure (e.g. a commit before a change).
sys.path.insert(0, os.environ.get("BENCH_CARAMBA_ROOT") or str(Path(__file__).resolve().parents[2]))

import common
from redis.asyncio import Redis

from core.config import Settings, load_settings
from core.types.agent import AgentSpec

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
MODEL = os.environ.get("CARAMBA_BENCH_MODEL", "hosted_vllm/fake-model")
# "" = the configured default (llm.client); "litellm" or "openai_compat" to choose.
CLIENT = os.environ.get("CARAMBA_BENCH_CLIENT", "")
# Celery mode: "on" runs the host's call keeper beside the worker (production's default,
# `caramba worker`) and counts both processes' CPU; by default the worker calls the model
# itself (llm.keeper off), like inline mode and bench/throughput.py. (A worker with the
# keeper on and none alive, as this bench had it before, pays the keeper's hand-over
# round trips for nothing: a state production never stays in.)
KEEPER = os.environ.get("CARAMBA_BENCH_KEEPER", "off") == "on"
_TICK = os.sysconf("SC_CLK_TCK")


def spec(name: str) -> AgentSpec:
    if name == "Orchestrator":
        tools: tuple[str, ...] = ("create_agent", "wait_for_messages", "finish", "calculate")
        return AgentSpec(name=name, role="orchestrator", tools=tools)
    return AgentSpec(name=name, role="solo", tools=("calculate", "finish"))


def _ended(head: str | None) -> bool:
    return bool(head) and any(
        f'"status":"{s}"' in str(head) for s in ("completed", "failed", "cancelled")
    )


class EndHook:
    """Inline mode: a run's wait ends in the turn that ends its root agent, seen by this
    process's job handler as it returns (no polling; the peers' ``await`` of an agent's
    run is the same thing). The run's head, read once then, confirms the run ended."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[str, asyncio.Future[None]]] = {}
        self.ended: set[tuple[str, str]] = set()  # (run, agent) ended before anyone waited
        self.svc: Any = None

    def install(self) -> None:
        """Wrap the embedded scheduler's job handler (looked up at each job)."""
        from core.process import embedded
        from core.scheduler.base import TurnOutcome

        handle = embedded.handle

        async def handled(svc: Any, job: Any) -> Any:
            outcome = await handle(svc, job)
            if outcome is TurnOutcome.ENDED:
                waiting = self.pending.get(job.run_id)
                if waiting and waiting[0] == job.agent_id:
                    del self.pending[job.run_id]
                    waiting[1].set_result(None)
                elif not waiting:
                    self.ended.add((job.run_id, job.agent_id))
            return outcome

        embedded.handle = handled  # type: ignore[assignment]

    async def wait(self, run_id: str, root_id: str) -> None:
        if (run_id, root_id) not in self.ended:
            future = asyncio.get_running_loop().create_future()
            self.pending[run_id] = (root_id, future)
            await future
        head = await self.svc.store.run_head(run_id)
        if not head.status.terminal:
            raise RuntimeError(f"run {run_id}: its root agent ended, the run did not")


class PollWaiter:
    """Celery mode (outside the measured worker): ends runs' waits with one pipelined poll
    of their heads for all of them (not one poller each)."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self.redis, self.prefix = redis, prefix
        self.pending: dict[str, asyncio.Future[None]] = {}
        self.task: asyncio.Task[None] | None = None

    async def wait(self, run_id: str, root_id: str) -> None:
        future = asyncio.get_running_loop().create_future()
        self.pending[run_id] = future
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._poll())
        await future

    async def _poll(self) -> None:
        while self.pending:
            await asyncio.sleep(0.02 if len(self.pending) < 20 else 0.25)
            ids = list(self.pending)
            async with self.redis.pipeline(transaction=False) as pipe:
                for run_id in ids:
                    pipe.get(f"{self.prefix}:run:{run_id}:head")
                heads = await pipe.execute()
            for run_id, head in zip(ids, heads, strict=True):
                if _ended(head):
                    self.pending.pop(run_id).set_result(None)


def client_used(conf: Settings) -> str:
    """Which client calls the model for ``conf`` (as the router decides)."""
    if os.environ.get("BENCH_LLM") == "raw":
        return "raw"
    try:
        from core.llm.routes import is_direct
    except ImportError:  # a checkout from before the direct client (BENCH_CARAMBA_ROOT)
        return "litellm"
    return "openai_compat" if is_direct(conf.llm, MODEL) else "litellm"


class RawModel:
    """For profiling Caramba's own share (``BENCH_LLM=raw``): the model called over bare
    aiohttp instead of litellm."""

    def __init__(self, base_url: str) -> None:
        self.url = f"{base_url}/chat/completions"
        self.session: Any = None

    async def complete(self, request: Any) -> Any:
        import aiohttp

        from core.llm.base import LLMResponse
        from core.types.chat import ToolCall, Usage

        if self.session is None:
            self.session = aiohttp.ClientSession()
        body = {
            "model": request.model.split("/", 1)[-1],
            "messages": [m.to_openai() for m in request.messages],
            "tools": list(request.tools),
        }
        async with self.session.post(self.url, json=body) as response:
            answer = await response.json()
        message = answer["choices"][0]["message"]
        calls = tuple(
            ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
            for c in message.get("tool_calls") or ()
        )
        usage = answer["usage"]
        return LLMResponse(
            model=request.model,
            content=message.get("content"),
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"]
            ),
        )

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()


def settings(prefix: str, base_url: str, queue: str, slots: int) -> Settings:
    llm: dict[str, str] = {"model": MODEL, "api_base": base_url}
    if CLIENT:
        llm["client"] = CLIENT
    return load_settings(
        redis={"url": URL, "key_prefix": prefix},
        llm=llm,
        celery={"queue": queue},
        limits={"stall_repeats": 50},
        scheduler={"inline_concurrency": slots},
    )


async def inline(base_url: str, slots: int) -> None:
    from core.process.embedded import embedded_services
    from core.runs import learning
    from core.runs.control import start_run

    prefix = f"peers-{uuid.uuid4().hex[:6]}"
    redis = Redis.from_url(URL, decode_responses=True)
    try:
        conf = settings(prefix, base_url, "unused", slots)
        print(f"BENCH_CLIENT {client_used(conf)}", flush=True)
        llm = RawModel(base_url) if os.environ.get("BENCH_LLM") == "raw" else None
        waiter = EndHook()
        waiter.install()
        async with embedded_services(conf, llm) as svc:
            waiter.svc = svc
            gate = asyncio.Semaphore(50)  # fewer than the Redis pool's connections (64)
            started: list[str] = []

            async def one(name: str) -> None:
                root = spec(name)
                async with gate:
                    run_id = await start_run(svc, "bench", root, requested_by="bench")
                started.append(run_id)
                await waiter.wait(run_id, root.id)

            async def settled() -> None:  # the warm-up's run recorded in the library
                for run_id in started:
                    await learning.learn(svc, run_id, wait_s=60)

            await common.measure(one, lambda: one("Orchestrator"), settled=settled)
        print(f"BENCH_LITELLM_IMPORTED {'litellm' in sys.modules}", flush=True)
    finally:
        await _clean(redis, prefix)


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _tasks_ns(pid: int) -> dict[str, int]:
    """Each live thread of ``pid`` and its time on a CPU in ns (``schedstat``: not the
    10 ms ticks of ``stat``, which are ±1 tick of a phase's 20–30)."""
    out: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[task.name] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return out


class ProcessCpu:
    """A process's CPU seconds between reads: in ns from its threads' ``schedstat`` when
    the same threads lived at both reads, else (a thread came or went, its time unknown)
    from ``stat``'s ticks. ``exact`` says which the last read could use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.first: tuple[dict[str, int], float] | None = None
        self.exact = False

    def __call__(self) -> float:
        threads, ticks = _tasks_ns(self.pid), _proc_cpu_s(self.pid)
        if self.first is None:
            self.first = (threads, ticks)
            return ticks
        (threads0, ticks0), self.exact = self.first, threads.keys() == self.first[0].keys()
        if not self.exact:
            return ticks
        return ticks0 + sum(threads.values()) / 1e9 - sum(threads0.values()) / 1e9


class ThreadSplit:
    """The measured worker's CPU split by thread: its main thread (Celery's consumer:
    receiving, acknowledging, the pool's bookkeeping), the turns' event loop (the turns,
    the ledger's moves, the background loop) and the rest (the pool's threads, publishing
    threads). Read at each call of :meth:`total` (common.measure calls it at the start and
    at the end of the phase); printed as ``BENCH_THREADS``."""

    def __init__(self, pid: int, loop_tid: int) -> None:
        self.pid, self.loop_tid = pid, loop_tid
        self.reads: list[tuple[float, float, float]] = []
        self.cpu = ProcessCpu(pid)

    def total(self) -> float:
        total = self.cpu()
        main, loop = _thread_s(self.pid, self.pid), _thread_s(self.pid, self.loop_tid)
        self.reads.append((total, main, loop))
        return total

    def report(self) -> str:
        (t0, m0, l0), (t1, m1, l1) = self.reads[0], self.reads[-1]
        main, loop = m1 - m0, l1 - l0
        other = t1 - t0 - main - loop
        return json.dumps({"main_s": main, "loop_s": loop, "other_s": other})


def _thread_s(pid: int, tid: int) -> float:
    """One thread's CPU seconds, in ns (``schedstat``), 0 once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _loop_tid(output: str) -> int:
    found = re.search(r"turn runtime started \(queue [^,]*, loop thread (\d+)\)", output)
    return int(found.group(1)) if found else 0


def _proc_peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def celery(base_url: str, slots: int) -> None:
    from core.llm.scripted import ScriptedModel
    from core.process.wiring import build_services
    from core.runs.control import approve_run, propose_run
    from tasks.app import make_app
    from tasks.scheduler import CeleryScheduler
    from tests.integration.processes import Process, worker_env

    prefix, queue = f"peers-{uuid.uuid4().hex[:6]}", f"peers-{uuid.uuid4().hex[:6]}"
    env = worker_env(
        redis__url=URL,
        redis__key_prefix=prefix,
        celery__queue=queue,
        llm__model=MODEL,
        llm__api_base=base_url,
        limits__stall_repeats="50",
        llm__keeper="true" if KEEPER else "false",
        **({"llm__client": CLIENT} if CLIENT else {}),
    )
    # CARAMBA_BENCH_SAMPLE=<file>: the worker under bench/thread_sampler.py, sampled over
    # the measured phase (where its CPU goes, thread by thread), written to <file>.<phase>.
    sample = os.environ.get("CARAMBA_BENCH_SAMPLE", "")
    if sample:
        sample += "." + sys.argv[sys.argv.index("--phase") + 1]
        sampler = os.path.join(os.path.dirname(os.path.dirname(__file__)), "thread_sampler.py")
        env.update(PROF_ON=f"{sample}.on", PROF_OUT=sample)
        argv = [sys.executable, sampler, "tasks.worker", f"--concurrency={slots}"]
        worker = Process(argv, env, "peers-worker")
    else:
        worker = Process.worker(env, "peers-worker", concurrency=slots)
    measured = [worker]
    if KEEPER:
        measured.append(Process([sys.executable, "-m", "core.process.keeper_main"], env, "keeper"))
    redis = Redis.from_url(URL, decode_responses=True)
    conf = settings(prefix, base_url, queue, slots)
    print(f"BENCH_CLIENT {client_used(conf)}{', keeper' if KEEPER else ''}", flush=True)
    app = make_app(conf)
    publisher = CeleryScheduler(app, conf)
    svc = build_services(conf, publisher, llm=ScriptedModel(), redis=redis)
    try:
        for proc in measured:
            proc.wait_for(" ready.", timeout=120)
        waiter = PollWaiter(redis, prefix)
        gate = asyncio.Semaphore(50)  # fewer than the Redis pool's connections (64)
        started: list[str] = []

        async def one(name: str) -> None:
            root = spec(name)
            async with gate:
                run_id = await propose_run(svc, "bench", root, requested_by="bench")
                await approve_run(svc, run_id, "bench")
            started.append(run_id)
            await waiter.wait(run_id, root.id)

        async def settled() -> None:
            """The warm-up's run recorded in the library by the worker (polled from here,
            outside the measured worker, before its phase)."""
            keys = [svc.store.keys.learned(run_id) for run_id in started]
            deadline = time.monotonic() + 60
            while await redis.exists(*keys) < len(keys):
                if time.monotonic() > deadline:
                    raise RuntimeError("the worker did not record the warm-up's run in 60 s")
                await asyncio.sleep(0.05)

        split = ThreadSplit(worker.pid, _loop_tid(worker.output()))
        keeper = measured[1:]

        def cpu() -> float:
            if sample:  # sampling from the phase's first read to its last
                if split.reads:
                    os.unlink(f"{sample}.on")
                else:
                    open(f"{sample}.on", "w").close()
            return split.total() + sum(_proc_cpu_s(p.pid) for p in keeper)

        await common.measure(
            one,
            lambda: one("Orchestrator"),
            cpu=cpu,
            rss=lambda: _proc_peak_mb(worker.pid),  # per worker process
            settled=settled,
        )
        if sample:
            await asyncio.sleep(0.5)  # the sampler writes its file
        if split.loop_tid:
            print(f"BENCH_THREADS {split.report()}", flush=True)
            print(f"BENCH_CPU_CLOCK {'ns' if split.cpu.exact else 'ticks'}", flush=True)
        if KEEPER and "turns' calls go to the call keeper" not in worker.output():
            raise RuntimeError("CARAMBA_BENCH_KEEPER=on, but the worker saw no keeper")
    finally:
        await publisher.aclose()
        app.close()
        for proc in measured:
            proc.cleanup()
        await _clean(redis, prefix)


async def _clean(redis: Redis, prefix: str) -> None:
    keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=5000)]
    for i in range(0, len(keys), 5000):
        await redis.delete(*keys[i : i + 5000])
    await redis.aclose()


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    mode = sys.argv.pop(sys.argv.index("--mode") + 1)
    sys.argv.remove("--mode")
    base = sys.argv[sys.argv.index("--base-url") + 1]
    n = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 1000
    # On the event loop the product runs turns on (scheduler.event_loop: uvloop by default,
    # CARAMBA_SCHEDULER__EVENT_LOOP=asyncio for the standard library's), as `caramba run`.
    main = (inline if mode == "inline" else celery)(base, max(64, n + 16))
    try:
        from core.process import event_loop
    except ImportError:  # a tree from before the setting (peers.py --before): asyncio's
        asyncio.run(main)
    else:
        event_loop.run(main, load_settings().scheduler.event_loop)
