"""One Celery worker process running agent turns: ``python -m tasks.worker``.

The pool is ``threads`` with ``celery.concurrency`` slots: turns spend their time
waiting on the model, and every slot hands its turn to the process's one event loop
(``tasks.runtime``). ``caramba worker`` starts one of these per core
(``tasks.supervisor``); each can also be started on its own, e.g. under systemd.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Sequence

from core.config import Settings, load_settings
from core.errors import CarambaError
from tasks.app import make_app, require_redis

log = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s %(levelname)s %(processName)s[%(process)d] %(name)s: %(message)s"


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
        # after; turns need neither (all shared state is in Redis).
        "--without-gossip",
        "--without-mingle",
    ]


def run_worker(
    settings: Settings, *, concurrency: int | None = None, loglevel: str = "info", name: str = ""
) -> int:
    """Run one worker in this process until it is told to stop (SIGTERM / SIGINT: warm
    shutdown, running turns finish; a second SIGINT or SIGQUIT: cold shutdown).

    Returns the worker's exit code."""
    app = make_app(settings)
    argv = worker_argv(settings, concurrency=concurrency, loglevel=loglevel, name=name)
    code = app.start(argv=argv)
    return int(code or 0)


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


def configure_logging(loglevel: str) -> None:
    logging.basicConfig(level=loglevel.upper(), format=LOG_FORMAT, force=True)
    # One line per HTTP call to the model is noise at INFO.
    for noisy in ("httpx", "LiteLLM", "litellm"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tasks.worker", description=__doc__)
    parser.add_argument("--concurrency", type=int, default=None, help="turn slots (threads)")
    parser.add_argument("--loglevel", default="info")
    parser.add_argument("--name", default="", help="Celery node name (name@host)")
    parser.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    configure_logging(args.loglevel)
    try:
        settings = load_settings()
        require_redis(settings)
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
