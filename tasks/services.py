"""Services for a process that shows runs to people (a chat bot) rather than running
turns: with ``redis.url`` set, its jobs go to the Celery workers (``caramba worker``);
without it, everything runs in the process itself (embedded mode, for trying it out)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from core.config import Settings
from core.process.embedded import embedded_services
from core.process.tools_start import start_tools, stop_tools
from core.process.wiring import build_llm, build_services
from core.services import Services


@contextlib.asynccontextmanager
async def publishing_services(settings: Settings) -> AsyncIterator[Services]:
    """Services whose scheduler publishes every job to the Celery workers."""
    # Imported here: a bot in embedded mode needs no Celery (0.1 s of start-up).
    from tasks.app import make_app, require_redis
    from tasks.scheduler import CeleryScheduler

    require_redis(settings)
    scheduler = CeleryScheduler(make_app(settings), settings)
    svc = build_services(settings, scheduler, llm=build_llm(settings))
    try:
        # The MCP servers' tools too: the card shows them, and starting a run checks them.
        await start_tools(svc)
        yield svc
    finally:
        await stop_tools(svc)
        await scheduler.aclose()
        await svc.aclose()


def chat_services(settings: Settings) -> contextlib.AbstractAsyncContextManager[Services]:
    """The services a chat bot's process runs with, as the settings call for."""
    if settings.redis.embedded:
        return embedded_services(settings, build_llm(settings))
    return publishing_services(settings)
