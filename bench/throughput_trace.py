"""A worker process that writes a timeline of each turn (bench/throughput_hops.py --trace).

    python -m bench.throughput_trace --concurrency=50   (as ``python -m tasks.worker``)

Wraps, in this process only, the steps a turn goes through — the consumer receiving its
message, the hand-over to the loop, the chain, the turn's phases, the model call, the
scheduling of what follows (a chained turn or a publish) — and appends one line per step's
start and end to ``$CARAMBA_TRACE_DIR/<pid>.trace``: monotonic time, thread, the turn
(agent id # seq), the step. Nothing in the repository's code changes.
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
import time
from typing import Any

# Open for the process's life, a line at a time.
_OUT = open(os.path.join(os.environ["CARAMBA_TRACE_DIR"], f"{os.getpid()}.trace"), "a", buffering=1)
_LOCK = threading.Lock()
TURN: contextvars.ContextVar[str] = contextvars.ContextVar("trace_turn", default="-")


def mark(event: str, turn: str | None = None) -> None:
    thread = threading.current_thread().name
    line = f"{time.monotonic():.6f} {thread} {turn or TURN.get()} {event}\n"
    with _LOCK:
        _OUT.write(line)


def _job_turn(job: Any) -> str:
    return f"{job.agent_id}#{job.seq}"


def wrap_async(owner: Any, name: str, label: str, sets_turn: bool = False) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    async def outer(*args: Any, **kwargs: Any) -> Any:
        job = next((a for a in args if hasattr(a, "agent_id") and hasattr(a, "seq")), None)
        token = TURN.set(_job_turn(job)) if sets_turn and job is not None else None
        mark(f"{label}>")
        try:
            return await inner(*args, **kwargs)
        finally:
            mark(f"{label}<")
            if token is not None:
                TURN.reset(token)

    setattr(owner, name, outer)


def wrap_sync(owner: Any, name: str, label: str) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def outer(*args: Any, **kwargs: Any) -> Any:
        job = next((a for a in args if hasattr(a, "agent_id") and hasattr(a, "seq")), None)
        turn = _job_turn(job) if job is not None else None
        mark(f"{label}>", turn)
        try:
            return inner(*args, **kwargs)
        finally:
            mark(f"{label}<", turn)

    setattr(owner, name, outer)


def install() -> None:
    from core.agent.phases import commit, model, prepare, tools
    from core.llm import openai_compat
    from tasks import chain, dispatch, runtime, scheduler

    wrap_async(runtime, "handle", "handle", sets_turn=True)
    wrap_async(prepare, "load", "load")
    wrap_async(prepare, "prepare", "prepare")
    wrap_async(model, "call", "model")
    wrap_async(tools, "run", "tools")
    wrap_async(commit, "commit", "commit")
    wrap_async(openai_compat.OpenAICompatClient, "complete", "http")
    wrap_async(scheduler.CeleryScheduler, "submit", "submit")
    wrap_async(scheduler.CeleryScheduler, "move", "move")
    wrap_sync(scheduler.CeleryScheduler, "publish", "publish")
    wrap_sync(runtime.WorkerRuntime, "submit_turn", "submit_turn")
    wrap_async(chain, "run_chain", "chain", sets_turn=True)
    runtime.run_chain = chain.run_chain  # imported by name there

    strategy = dispatch.LoopDispatch.strategy

    def traced_strategy(self: Any, *args: Any, **kwargs: Any) -> Any:
        handler = strategy(self, *args, **kwargs)

        def traced(message: Any, *rest: Any) -> Any:
            task_id = str((message.headers or {}).get("id", ""))[:8]
            mark("received>", f"task:{task_id}")
            try:
                return handler(message, *rest)
            finally:
                mark("received<", f"task:{task_id}")

        return traced

    dispatch.LoopDispatch.strategy = traced_strategy  # type: ignore[method-assign]


if __name__ == "__main__":
    install()
    from tasks.worker import main

    main()
