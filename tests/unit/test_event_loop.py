"""The event loop turn-running processes run on (``scheduler.event_loop``,
``core.process.event_loop``): uvloop where it is installed, asyncio's loop on request or
where it is missing, and a clear error when uvloop is demanded and absent."""

from __future__ import annotations

import asyncio
import sys

import pytest

from core.config import load_settings
from core.errors import ConfigError
from core.process import event_loop
from core.process.event_loop import EventLoopUnavailable, loop_factory, loop_name
from tasks.loop import LoopThread


async def _kind() -> str:
    await asyncio.sleep(0)
    return loop_name(asyncio.get_running_loop())


def test_auto_and_uvloop_run_on_uvloop_where_it_is_installed() -> None:
    assert event_loop.run(_kind(), "auto") == "uvloop"
    assert event_loop.run(_kind(), "uvloop") == "uvloop"


def test_asyncio_keeps_the_standard_librarys_loop() -> None:
    assert event_loop.run(_kind(), "asyncio") == "asyncio"


def test_without_uvloop_auto_falls_back_and_uvloop_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as on Windows: not installed
    assert event_loop.run(_kind(), "auto") == "asyncio"
    with pytest.raises(EventLoopUnavailable) as caught:
        loop_factory("uvloop")
    said = str(caught.value)
    assert "uvloop is not installed" in said
    assert "pip install uvloop" in said and '"auto"' in said


def test_the_setting_defaults_to_auto_and_refuses_another_loop() -> None:
    assert load_settings().scheduler.event_loop == "auto"
    assert load_settings(scheduler={"event_loop": "asyncio"}).scheduler.event_loop == "asyncio"
    with pytest.raises(ConfigError, match="event_loop"):
        load_settings(scheduler={"event_loop": "trio"})


@pytest.mark.parametrize("choice", ["uvloop", "asyncio"])
def test_the_worker_loop_thread_runs_the_chosen_loop(choice: event_loop.Choice) -> None:
    thread = LoopThread("test-loop", loop_factory(choice))
    thread.start()
    try:
        assert thread.run(_kind(), timeout=5) == choice
    finally:
        thread.stop()
