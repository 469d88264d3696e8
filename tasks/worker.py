"""One Celery worker process running agent turns: ``python -m tasks.worker``.

The pool is ``threads`` with ``celery.concurrency`` slots: turns spend their time
waiting on the model, and every slot hands its turn to the process's one event loop
(``tasks.runtime``). ``caramba worker`` starts one of these per core
(``tasks.supervisor``); each can also be started on its own, e.g. under systemd.

The process exits 0 only when it was told to stop (SIGTERM, SIGINT, SIGQUIT). A worker
whose Celery main loop ends any other way exits non-zero, so that whatever runs it (the
supervisor, systemd's ``Restart=on-failure``) starts it again.
"""

# ruff: noqa: E402  (the worker process skips some imports before the others: see below)
from __future__ import annotations

import sys

# Imported by Celery, kombu and redis-py at start whenever they are installed, and never
# used by a worker: kombu's YAML serializer (turns are JSON), the CLI's syntax colouring,
# redis-py's OpenTelemetry metrics (never enabled). About 5 MB of every worker process.
# Only in the worker process itself (``python -m tasks.worker``), and only while it
# starts: main() lets them be imported again afterwards, should anything want them.
_SKIPPED = ("yaml", "pygments", "opentelemetry.sdk.metrics")
if __name__ == "__main__":
    for _name in _SKIPPED:
        sys.modules.setdefault(_name, None)  # type: ignore[arg-type]  # ImportError

import argparse
import asyncio
import logging
import os
import signal
import socket
import threading
import time
import warnings
from collections.abc import Sequence
from typing import Any

from celery import Celery, signals
from celery.exceptions import CPendingDeprecationWarning

from core.config import Settings, load_settings
from core.errors import CarambaError
from core.process import heap
from core.state.reach import redis_problem
from tasks.app import make_app, worker_of
from tasks.production import configure_logging, require_redis

log = logging.getLogger(__name__)


def worker_argv(
    settings: Settings, *, concurrency: int | None = None, loglevel: str = "info", name: str = ""
) -> list[str]:
    """The ``celery worker`` arguments for a turn worker."""
    node = name or f"caramba-{os.getpid()}@{socket.gethostname()}"
    return [
        "worker",
        "--pool=threads",
        f"--concurrency={concurrency or settings.celery.concurrency}",
        f"--queues={settings.celery.queue}",
        f"--loglevel={loglevel}",
        f"--hostname={node}",
        # Gossip and mingle make every worker talk to every other one at start-up and
        # after; turns need neither (all shared state is in Redis). Nor do they need the
        # heartbeat events (one publish every 2 s, for monitors): liveness is the turn
        # ledger's leases (tasks.ledger).
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def run_worker(
    settings: Settings, *, concurrency: int | None = None, loglevel: str = "info", name: str = ""
) -> int:
    """Run one worker in this process until it is told to stop (SIGTERM / SIGINT: warm
    shutdown, running turns finish; a second SIGINT or SIGQUIT: cold shutdown).

    Returns the worker's exit code: non-zero if it stopped without being told to."""
    app = make_app(settings)
    argv = worker_argv(settings, concurrency=concurrency, loglevel=loglevel, name=name)
    # Celery warns on every lost connection that it will cancel running tasks from 6.0 on
    # unless told otherwise; the app tells it (worker_cancel_long_running_tasks_...=False).
    warnings.filterwarnings(
        "ignore", message=r"\s*In Celery 5\.1 we introduced", category=CPendingDeprecationWarning
    )
    requested: list[str] = []

    def on_shutting_down(sender: Any = None, sig: str = "", **_: Any) -> None:
        requested.append(sig)  # Celery's handler of SIGTERM, SIGINT or SIGQUIT

    def on_ready(sender: Any = None, **_: Any) -> None:
        if getattr(sender, "app", None) is app:  # this app's consumer, connected
            freeze_startup_objects()

    signals.worker_shutting_down.connect(on_shutting_down, weak=False)
    signals.worker_ready.connect(on_ready, weak=False)
    try:
        start_celery_worker(app, argv)
    finally:
        signals.worker_shutting_down.disconnect(on_shutting_down)
        signals.worker_ready.disconnect(on_ready)
    return exit_code(worker_of(app), requested)


def freeze_startup_objects() -> None:
    """Move what start-up made (modules, settings, the Services, Celery's and kombu's
    objects: they live as long as the process) into the collector's permanent generation,
    as the chat bots do (``bots/chat/startup.py``). Otherwise each full collection walks
    them all again: 91-236 ms of CPU under load, with the turns' loop stalled meanwhile.
    Run once, when the worker's consumer is first ready (the runtime started before it)."""
    log.info("start-up objects frozen: %d kept out of garbage collection", heap.freeze())


def start_celery_worker(app: Celery, argv: Sequence[str]) -> None:
    """``celery worker`` with ``argv`` (``worker`` first) on ``app``, until it stops.

    The ``worker`` command itself, with the context the ``celery`` command group would
    give it (this app, no preload or user options), rather than ``app.start``: the group
    imports every other subcommand on the way, the ``amqp`` shell's prompt_toolkit among
    them (0.13 s and 12 MB of each worker's start). The worker's exit code is read from
    the worker afterwards (:func:`exit_code`): click's is dropped, as ``app.start`` did."""
    from celery.bin.base import CLIContext
    from celery.bin.worker import worker

    if not argv or argv[0] != "worker":
        raise ValueError(f"not a `celery worker` command line: {list(argv)}")
    context = CLIContext(app=app, no_color=_no_color(), workdir=None, quiet=False)
    worker.main(args=list(argv[1:]), prog_name="celery worker", obj=context, standalone_mode=False)


def _no_color() -> bool:
    """The ``celery`` group's ``--no-color`` as its ``NO_COLOR`` variable sets it."""
    return os.environ.get("NO_COLOR", "").strip().lower() in {"1", "true", "t", "yes", "y", "on"}


def exit_code(worker: Any, requested: Sequence[str]) -> int:
    """The process's exit code once the Celery worker ``worker`` has returned."""
    if worker is None:
        log.error("the Celery worker did not start")
        return 1
    raw = worker.exitcode  # None, an int, or anything a SystemExit carried
    code = raw if isinstance(raw, int) else 0 if raw is None else 1
    if code == 0 and not requested:
        log.error("the Celery worker stopped without being asked to; exiting with code 1")
        return 1
    return code


def watch_parent(parent_pid: int, interval_s: float = 1.0) -> None:
    """Shut this worker down gracefully if the supervisor that started it disappears
    (killed with -9, say): workers run in their own process group and would otherwise
    be orphaned."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        log.warning("supervisor %d is gone; shutting down", parent_pid)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="caramba-parent-watch", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tasks.worker", description=__doc__)
    parser.add_argument("--concurrency", type=int, default=None, help="turn slots (threads)")
    parser.add_argument("--loglevel", default="info")
    parser.add_argument("--name", default="", help="Celery node name (name@host)")
    parser.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import celery.bin.worker  # noqa: F401  (the last of the imports that skip _SKIPPED)

    for name in _SKIPPED:
        if name in sys.modules and sys.modules[name] is None:
            del sys.modules[name]
    configure_logging(args.loglevel)
    try:
        settings = load_settings()
        require_redis(settings)
        # Said in one line now, not as Celery's traceback after its retries.
        problem = asyncio.run(redis_problem(settings.redis))
        if problem is not None:
            raise problem
    except CarambaError as exc:
        log.error("configuration error: %s", exc)
        raise SystemExit(2) from None
    if args.parent_pid:
        watch_parent(args.parent_pid)
    code = run_worker(
        settings, concurrency=args.concurrency, loglevel=args.loglevel, name=args.name
    )
    raise SystemExit(code)


if __name__ == "__main__":
    main()
