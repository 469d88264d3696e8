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
# pytest imports readline, and GNU readline puts COLUMNS=80 and LINES=24 in the process's
# environment at the C level (os.environ does not show them): pytest-xdist's workers inherit
# them, and a rich console made there is 80 columns wide whatever COLUMNS a test sets. So the
# session's process names the ones it really has, and each worker drops the others.
_TERMINAL = ("COLUMNS", "LINES")
if "PYTEST_XDIST_WORKER" in os.environ:
    _had = os.environ.get("CARAMBA_TEST_TERMINAL", ",".join(_TERMINAL)).split(",")
    for _name in _TERMINAL:
        if _name not in _had:
            os.environ.pop(_name, None)
else:
    os.environ["CARAMBA_TEST_TERMINAL"] = ",".join(n for n in _TERMINAL if n in os.environ)
# The session's own folders, below, are named in this variable. pytest-xdist's workers
# (`make test` runs the suite on several) inherit the controller's environment: each makes
# folders of its own instead of sharing the controller's with the others.
_OWN_DIRS = "CARAMBA_TEST_SESSION_DIRS"


def _session_dir(variable: str, prefix: str) -> None:
    """``variable`` names a folder of this test session's, removed at its end, unless the
    caller chose one (a variable set outside the tests is kept)."""
    ours = os.environ.get(_OWN_DIRS, "").split(",")
    if variable in os.environ and variable not in ours:
        return
    folder = tempfile.mkdtemp(prefix=prefix)
    os.environ[variable] = folder
    os.environ[_OWN_DIRS] = ",".join(v for v in {*ours, variable} if v)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)


# Runs that end are recorded in the agent library by the background loop: in tests, in a
# folder of the test session's (worker processes inherit it), never the project's.
_session_dir("CARAMBA_LIBRARY__INDEX_DIR", "caramba-test-library-")
# Embedded mode keeps run workspaces in a folder: in tests, a folder of the session's.
_session_dir("CARAMBA_WORKSPACE__DIR", "caramba-test-workspaces-")
_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "", None}


# Test files that must not run at the same time as one another under pytest-xdist: each
# group's files run on one worker, one after the other (see pytest_xdist_make_scheduler).
_GROUPS = {
    # Chromium is heavy (a browser, its GPU and renderer processes): one at a time. Two at
    # once, beside the rest of the suite, missed a 30 s wait for the page.
    "browser": (
        "test_web_browser.py",
        "test_web_chat_browser.py",
        "test_web_chat_schedules_browser.py",
        "test_web_spend_browser.py",
    ),
    # Each starts many processes (Redis servers and Sentinels, Celery workers, bots) and
    # kills some on a timetable: beside one another, a failover lagged enough to lose a
    # run's creation (test_runs_in_flight_complete_after_the_primary_is_killed).
    "processes": (
        "test_chaos.py",
        "test_sentinel_failover.py",
        "test_sentinel_lossy.py",
        "test_several_hosts.py",
        "test_worker_crash.py",
        "test_worker_crash_lease.py",
        "test_worker_redis_restart.py",
    ),
}
_GROUP_OF = {name: group for group, names in _GROUPS.items() for name in names}


def _scope(nodeid: str) -> str:
    """A test's unit of work under ``--dist loadfile``: its file, or its file's group."""
    path = nodeid.split("::", 1)[0]
    return _GROUP_OF.get(path.rsplit("/", 1)[-1], path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test`` runs the suite on pytest-xdist workers with ``--dist loadfile``: a test
    file's tests run on one worker, in their order, sharing their module's fixtures as in a
    serial run; here the files of each of ``_GROUPS`` also share one worker. (pytest 9 has
    no settable node ids: xdist's ``--dist loadgroup`` would not group at all.)"""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileGroups(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return FileGroups(config, log)


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
