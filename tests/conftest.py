"""Shared fixtures. Every test runs behind a network guard: only loopback is reachable."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from core.config import Settings, load_settings
from core.llm.base import LLM
from core.process.jobs import handle
from core.process.wiring import build_services
from core.scheduler.inline import InlineScheduler
from core.services import Services

REDIS_URL = os.environ.get("CARAMBA_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# Runs that end are recorded in the agent library by the background loop: in tests, in a
# folder of the test session's (worker processes inherit it), never the project's.
if "CARAMBA_LIBRARY__INDEX_DIR" not in os.environ:
    _library_dir = tempfile.mkdtemp(prefix="caramba-test-library-")
    os.environ["CARAMBA_LIBRARY__INDEX_DIR"] = _library_dir
    atexit.register(shutil.rmtree, _library_dir, ignore_errors=True)
# Embedded mode keeps run workspaces in a folder: in tests, a folder of the session's.
if "CARAMBA_WORKSPACE__DIR" not in os.environ:
    _workspace_dir = tempfile.mkdtemp(prefix="caramba-test-workspaces-")
    os.environ["CARAMBA_WORKSPACE__DIR"] = _workspace_dir
    atexit.register(shutil.rmtree, _workspace_dir, ignore_errors=True)
_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "", None}


class NetworkGuardError(RuntimeError):
    """A test tried to reach a host that is not this machine (a real LLM provider?)."""


@pytest.fixture(autouse=True)
def network_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any connection beyond loopback: no test may reach a real provider."""
    real_getaddrinfo = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in _LOOPBACK:
            raise NetworkGuardError(
                f"test tried to reach {name!r}: tests must stay on loopback "
                "(use the scripted model or tests/fakes/llm_server.py)"
            )
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)


@pytest.fixture
def settings() -> Settings:
    """Embedded settings with small limits, so caps are reached quickly."""
    return load_settings(redis={"url": ""}, limits={"turns_per_agent": 8})


def make_settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = {"redis": {"url": ""}}
    base.update(overrides)
    return load_settings(**base)


@contextlib.asynccontextmanager
async def _real_redis_client() -> AsyncIterator[Any]:
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        await client.ping()
    except Exception as exc:
        await client.aclose()
        pytest.fail(
            f"integration tests need Redis at {REDIS_URL} ({exc}); start it with "
            "`redis-server --daemonize yes` or set CARAMBA_TEST_REDIS_URL"
        )
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    client.test_prefix = prefix  # type: ignore[attr-defined]
    try:
        yield client
    finally:
        keys = [k async for k in client.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await client.delete(*keys)
        await client.aclose()


@pytest.fixture
async def real_redis() -> AsyncIterator[Any]:
    """A real Redis (db 15) under a unique key prefix; keys removed afterwards."""
    async with _real_redis_client() as client:
        yield client


ServicesFactory = Callable[..., Services]


@pytest.fixture
async def make_services() -> AsyncIterator[ServicesFactory]:
    """Build Services with an inline scheduler already running; stopped afterwards."""
    started: list[tuple[Services, InlineScheduler]] = []

    def factory(settings: Settings, llm: LLM, redis: Any = None, start: bool = True) -> Services:
        if redis is not None and hasattr(redis, "test_prefix"):
            settings = settings.model_copy(
                update={
                    "redis": settings.redis.model_copy(update={"key_prefix": redis.test_prefix})
                }
            )
        scheduler = InlineScheduler(settings.scheduler.inline_concurrency)
        svc = build_services(settings, scheduler, llm=llm, redis=redis)
        if start:
            scheduler.start(lambda job: handle(svc, job))
        started.append((svc, scheduler))
        return svc

    yield factory
    for svc, scheduler in started:
        await scheduler.stop()
        await svc.llm.aclose()
        if not hasattr(svc.redis, "test_prefix"):
            await svc.redis.aclose()


@pytest.fixture(params=["fakeredis", pytest.param("redis", marks=pytest.mark.integration)])
async def any_redis(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """The same test against fakeredis and against the real Redis server."""
    if request.param == "fakeredis":
        import fakeredis

        client = fakeredis.FakeAsyncRedis(decode_responses=True)
        yield client
        await client.aclose()
    else:
        async with _real_redis_client() as client:
            yield client


@pytest.fixture
async def services(any_redis: Any, kind: Any) -> AsyncIterator[Callable[..., Any]]:
    """For tests parametrised with ``tests.schedulers.SCHEDULERS``: build Services whose
    turns the parametrised scheduler runs (inline, or a real Celery worker)."""
    from tests.schedulers import scheduled_services

    async with contextlib.AsyncExitStack() as stack:

        async def make(settings: Settings, model: LLM) -> Services:
            return await stack.enter_async_context(
                scheduled_services(settings, model, kind, any_redis)
            )

        yield make
