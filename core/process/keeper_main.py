"""The call keeper's process: ``caramba keeper``, or ``python -m core.process.keeper_main``
(how ``caramba worker`` and the chaos bench start one).

One keeper per host is plenty (each makes ``llm.keeper_concurrency`` calls at once); it
needs ``redis.url`` and the ``[llm]`` settings of the workers it serves. SIGTERM or SIGINT:
no new calls, exit once the calls under way ended; a second signal: at once (those calls
are taken over by another keeper, or by this one when it is started again). Run it under
something that restarts it (``caramba worker`` does; systemd's ``Restart=always``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from collections.abc import Sequence

from core.config import Settings, load_settings
from core.errors import CarambaError, ConfigError
from core.process import event_loop
from core.process.keeper import Keeper
from core.process.wiring import build_llm, connect_redis

log = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s %(levelname)s %(processName)s[%(process)d] %(name)s: %(message)s"


async def serve(settings: Settings, *, parent_pid: int = 0) -> None:
    """Run a keeper in this process until it is told to stop."""
    if settings.redis.embedded:
        raise ConfigError(
            "the call keeper needs a Redis server",
            hint="set redis.url (CARAMBA_REDIS__URL) to the Redis the workers use",
        )
    llm = build_llm(settings)  # the keeper calls the model itself: the gateway
    redis = connect_redis(settings)
    keeper = Keeper(settings, llm, redis)
    stop = asyncio.Event()
    runner = asyncio.create_task(keeper.run(stop), name="call-keeper")
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        if stop.is_set():
            log.info("%s again: stopping now", sig.name)
            runner.cancel()
        else:
            log.info("%s: no new calls; stopping once the calls under way ended", sig.name)
            stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    watch = asyncio.create_task(_watch_parent(parent_pid, stop)) if parent_pid else None
    try:
        await runner
    except asyncio.CancelledError:
        if not stop.is_set():
            raise
    finally:
        if watch is not None:
            watch.cancel()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await llm.aclose()
        await redis.aclose()


async def _watch_parent(parent_pid: int, stop: asyncio.Event) -> None:
    """Stop gracefully if the supervisor that started this keeper disappears."""
    while os.getppid() == parent_pid:  # noqa: ASYNC110 (a parent's death has no event)
        await asyncio.sleep(1)
    log.warning("supervisor %d is gone; stopping", parent_pid)
    stop.set()


def configure_logging(loglevel: str) -> None:
    logging.basicConfig(level=loglevel.upper(), format=LOG_FORMAT, force=True)
    for noisy in ("httpx", "LiteLLM", "litellm"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m core.process.keeper_main")
    parser.add_argument("--loglevel", default="info")
    parser.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    configure_logging(args.loglevel)
    try:
        settings = load_settings()
        event_loop.run(serve(settings, parent_pid=args.parent_pid), settings.scheduler.event_loop)
    except CarambaError as exc:
        log.error("configuration error: %s", exc)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
