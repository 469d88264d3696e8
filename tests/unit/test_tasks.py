"""The Celery scheduler's parts that need no broker: app configuration, the event-loop
thread, the turn ledger, the supervisor, and the ``caramba worker`` command's checks."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from bots.cli import app as cli
from core.config import load_settings
from core.errors import ConfigError
from tasks.app import TURN_TASK, make_app
from tasks.loop import LoopThread
from tasks.supervisor import describe_exit
from tasks.worker import worker_argv
from tests.integration.processes import Process, worker_env

PRODUCTION = {"redis": {"url": "redis://127.0.0.1:6379/15", "key_prefix": "unit"}}


def test_production_mode_refuses_embedded_settings() -> None:
    with pytest.raises(ConfigError, match="CARAMBA_REDIS__URL"):
        make_app(load_settings(redis={"url": ""}))


def test_worker_command_says_what_to_set(monkeypatch) -> None:
    monkeypatch.delenv("CARAMBA_REDIS__URL", raising=False)
    result = CliRunner().invoke(cli, ["worker"], env={"CARAMBA_REDIS__URL": ""})
    assert result.exit_code == 2
    assert "CARAMBA_REDIS__URL" in " ".join(result.output.split())


def test_app_delivers_at_least_once_with_json_on_its_own_queue() -> None:
    settings = load_settings(**PRODUCTION, celery={"visibility_timeout_s": 120, "queue": "q1"})
    conf = make_app(settings).conf
    assert conf.broker_url == "redis://127.0.0.1:6379/15"
    assert (conf.task_acks_late, conf.task_reject_on_worker_lost) == (True, True)
    assert conf.worker_prefetch_multiplier == 1
    assert (conf.task_serializer, conf.accept_content) == ("json", ["json"])
    assert conf.task_default_queue == "q1" and conf.task_routes[TURN_TASK] == {"queue": "q1"}
    # kombu's restore is a backstop: long visibility timeout, a lock that a killed worker
    # cannot keep for long (lease_s, at most 10 s).
    assert conf.broker_transport_options == {
        "visibility_timeout": 120,
        "unacked_mutex_expire": 10,
        "unacked_restore_interval": 30,
        "unacked_restore_throttle": 1,
        "global_keyprefix": "unit:celery:",
    }


def test_each_app_has_its_own_turn_task() -> None:
    first = make_app(load_settings(**PRODUCTION))
    second = make_app(load_settings(**PRODUCTION, celery={"broker_url": "redis://other:6379/1"}))
    assert first.tasks[TURN_TASK] is not second.tasks[TURN_TASK]
    assert second.conf.broker_url == "redis://other:6379/1"


def test_worker_argv_runs_threads_on_the_configured_queue() -> None:
    settings = load_settings(**PRODUCTION, celery={"concurrency": 50, "queue": "turns"})
    argv = worker_argv(settings, loglevel="warning", name="w1@host")
    assert argv[0] == "worker"
    assert {"--pool=threads", "--concurrency=50", "--queues=turns", "--loglevel=warning"} <= set(
        argv
    )
    assert "--hostname=w1@host" in argv


def test_loop_thread_runs_coroutines_and_cancels_on_timeout() -> None:
    loop = LoopThread()
    loop.start()
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    try:
        assert loop.run(answer(), timeout=5) == 42
        with pytest.raises(TimeoutError):
            loop.run(slow(), timeout=0.05)
        loop.run(asyncio.wait_for(cancelled.wait(), 5), timeout=5)
        pending = loop.submit(asyncio.sleep(10))
    finally:
        loop.stop()
    assert pending.cancelled() and not loop.running


def test_describe_exit() -> None:
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL"
    assert describe_exit(0) == "exited with code 0"


SUPERVISE = textwrap.dedent(
    """
    import logging, sys
    from tasks.supervisor import Supervisor
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    child = [sys.executable, "-c", "import time; time.sleep(60)"]
    sys.exit(Supervisor(2, lambda i: child, restart_delay_s=0.1).run())
    """
)


def test_supervisor_restarts_a_dead_worker_and_stops_all_on_sigterm() -> None:
    supervisor = Process([sys.executable, "-c", SUPERVISE], worker_env(), "supervisor")
    try:
        supervisor.wait_for(" started (pid ", timeout=10, count=2)
        first = int(supervisor.output().split("worker 0 started (pid ")[1].split(")")[0])
        os.kill(first, signal.SIGKILL)
        supervisor.wait_for("worker 0 killed by SIGKILL", timeout=10)
        supervisor.wait_for(" started (pid ", timeout=10, count=3)
        assert supervisor.stop(timeout=10) == 0
        out = supervisor.output()
        assert out.count("stopped (killed by SIGTERM)") == 2, out
    finally:
        supervisor.cleanup()
