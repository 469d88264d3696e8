"""The services a turn needs, built once per process and passed down explicitly."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from redis.asyncio import BlockingConnectionPool, Redis

from core.bus import Bus
from core.config import Settings
from core.keys import Keys
from core.llm.base import LLM
from core.prompts import PromptLibrary
from core.scheduler.base import Scheduler
from core.store import Store
from core.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from core.intents import IntentProcessor
    from core.library import Library

log = logging.getLogger(__name__)


def _default_processors() -> dict[str, IntentProcessor]:
    from core.intents import default_processors

    return default_processors()


@dataclass
class Services:
    """Everything the agent turn and the tools use; never globals."""

    settings: Settings
    redis: Redis
    store: Store
    llm: LLM
    tools: ToolRegistry
    prompts: PromptLibrary
    scheduler: Scheduler
    bus: Bus
    # Intent kind → processor; chat adapters replace post_to_chat/notify with their own.
    intent_processors: dict[str, IntentProcessor] = field(default_factory=_default_processors)
    _library: Library | None = field(default=None, repr=False)
    _library_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    async def library(self) -> Library:
        """The agent library, opened on first use: its embedder loads once per process,
        and only in processes that plan or learn."""
        async with self._library_lock:
            if self._library is None:
                from core.library import open_library

                self._library = await open_library(self.settings, self.redis)
            return self._library

    async def aclose(self) -> None:
        if self._library is not None:
            await self._library.aclose()
        await self.llm.aclose()
        await self.redis.aclose()


def connect_redis(settings: Settings) -> Redis:
    """The configured Redis, or an in-process fakeredis in embedded mode."""
    if settings.redis.embedded:
        import fakeredis

        return fakeredis.FakeAsyncRedis(decode_responses=True)
    # A blocking pool: at the limit a turn waits for a free connection instead of failing
    # with "Too many connections" (hundreds of turns share one process's client).
    pool = BlockingConnectionPool.from_url(
        settings.redis.url,
        decode_responses=True,
        max_connections=settings.redis.max_connections,
        timeout=settings.redis.pool_timeout_s,
    )
    return Redis(connection_pool=pool)


def build_llm(settings: Settings) -> LLM:
    from core.llm.gateway import LiteLLMGateway

    return LiteLLMGateway(settings.llm)


def build_services(
    settings: Settings,
    scheduler: Scheduler,
    *,
    llm: LLM | None = None,
    redis: Redis | None = None,
    tools: ToolRegistry | None = None,
) -> Services:
    from core.tools.society import default_registry

    redis = redis if redis is not None else connect_redis(settings)
    keys = Keys(settings.redis.key_prefix)
    store = Store(redis, keys, settings.redis.events_maxlen)
    return Services(
        settings=settings,
        redis=redis,
        store=store,
        bus=Bus(store, keys, settings.bus),
        llm=llm if llm is not None else build_llm(settings),
        tools=tools if tools is not None else default_registry(),
        prompts=PromptLibrary(settings.prompts_dir),
        scheduler=scheduler,
    )
