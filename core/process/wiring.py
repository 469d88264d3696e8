"""Assembling a process's ``Services``: the one place that picks the Redis, the model
gateway, the tools and the intent processors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from redis.asyncio import Redis
from redis.asyncio.retry import Retry

from core import telemetry
from core.agent.keeper_client import KeptLLM
from core.config import Settings
from core.effects.intents import default_processors
from core.llm.base import LLM
from core.llm.gateway import LiteLLMGateway
from core.prompts import PromptLibrary
from core.scheduler.base import Scheduler
from core.services import Services
from core.state.bus import Bus
from core.state.client import async_client, connection_options
from core.state.durable_writes import require_replicas
from core.state.keys import Keys
from core.state.redis_target import target
from core.state.sentinel import SENTINEL_RETRIES, retry_backoff
from core.state.store import Store
from core.tools.defaults import default_registry
from core.tools.registry import ToolRegistry
from core.workspace import open_workspace

if TYPE_CHECKING:
    from core.library import Library


def connect_redis(settings: Settings) -> Redis:
    """The configured Redis, or an in-process fakeredis in embedded mode."""
    if settings.redis.embedded:
        import fakeredis

        return fakeredis.FakeAsyncRedis(decode_responses=True)
    # A blocking pool: at the limit a turn waits for a free connection instead of failing
    # with "Too many connections" (hundreds of turns share one process's client). TLS, the
    # ACL user and Sentinel as redis.* says (core/state/client.py).
    return async_client(
        settings.redis,
        max_connections=settings.redis.max_connections,
        timeout=settings.redis.pool_timeout_s,
        # A Redis restart leaves every pooled connection stale: a command retries on a new
        # one (about 6 s in all) instead of failing the turn; behind Sentinel through the
        # failover (a demoted primary's READONLY is a ConnectionError: retried on the new
        # one). A transaction that was WATCHing is not retried blindly: redis-py raises
        # WatchError, and the CAS retries.
        retry=Retry(
            retry_backoff(),
            retries=SENTINEL_RETRIES if target(settings.redis).sentinels else 6,
        ),
        # No per-command time-out; dead servers found by TCP (core/state/client.py).
        **connection_options(settings.redis),
    )


def build_llm(settings: Settings, *, keeper: bool = False) -> LLM:
    """The model gateway. ``keeper``: a worker's, whose turns' calls are made by the call
    keeper when ``llm.keeper`` is on (``core.agent.keeper_client``); embedded mode and the
    chat bots call the model directly."""
    gateway: LLM
    if settings.llm.client == "openai_compat":
        from core.llm.router import RoutedLLM

        gateway = RoutedLLM(settings.llm)
    else:
        gateway = LiteLLMGateway(settings.llm)
    return KeptLLM(gateway, settings.llm) if keeper and settings.llm.keeper else gateway


def build_services(
    settings: Settings,
    scheduler: Scheduler,
    *,
    llm: LLM | None = None,
    redis: Redis | None = None,
    tools: ToolRegistry | None = None,
) -> Services:
    """Services for this process; ``llm``, ``redis`` and ``tools`` replace the
    configured ones (tests, the demo)."""
    telemetry.setup(settings.telemetry)
    client = redis if redis is not None else connect_redis(settings)
    # Writes that must survive a failover wait for redis.replicas_to_ack replicas (0: off).
    if not settings.redis.embedded:
        require_replicas(
            client, settings.redis.replicas_to_ack, settings.redis.replicas_ack_timeout_ms
        )
    keys = Keys(settings.redis.key_prefix)
    store = Store(
        client, keys, settings.redis.events_maxlen, pipe_scripts=settings.redis.pipe_scripts
    )

    async def library() -> Library:
        # Imported here: the library (and its embedder) loads only in the processes that
        # plan or learn, when first used.
        from core.library import open_library

        return await open_library(settings, client)

    return Services(
        settings=settings,
        redis=client,
        store=store,
        bus=Bus(store, keys, settings.bus),
        workspace=open_workspace(settings, client),
        llm=llm if llm is not None else build_llm(settings, keeper=True),
        tools=tools if tools is not None else default_registry(settings),
        prompts=PromptLibrary(settings.prompts_dir),
        scheduler=scheduler,
        intent_processors=default_processors(),
        open_library=library,
    )
