"""The ended turns a worker's loop hands to its acknowledging thread (tasks.dispatch.Batch):
those that end in one round of the loop go as one task of the thread, none is lost, and a
thread that is gone (the worker stopping) leaves them to the broker, said."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any

import pytest

from tasks.dispatch import Batch, Ended


class Counting(concurrent.futures.ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def _ended(n: int) -> Ended:
    return Ended(message=None, job={"n": n}, task_id=f"t{n}", retries=0, fut=None)  # type: ignore[arg-type]


async def test_the_turns_ended_in_one_round_go_as_one_task() -> None:
    executor, ran = Counting(), []
    batch = Batch(executor, lambda items: ran.append([i.job["n"] for i in items]))
    for n in range(5):
        batch.add(_ended(n))
    await asyncio.sleep(0.05)  # the round ends; the thread runs the batch
    batch.add(_ended(5))
    await asyncio.sleep(0.05)
    executor.shutdown(wait=True)
    assert ran == [[0, 1, 2, 3, 4], [5]]
    assert executor.submitted == 2


def test_off_a_loop_a_turn_goes_at_once() -> None:
    executor, ran = Counting(), []
    batch = Batch(executor, lambda items: ran.extend(i.job["n"] for i in items))
    batch.add(_ended(1))
    executor.shutdown(wait=True)
    assert ran == [1]


def test_a_stopped_thread_leaves_them_to_the_broker_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor, ran = Counting(), []
    executor.shutdown(wait=True)
    batch = Batch(executor, lambda items: ran.extend(items))
    with caplog.at_level(logging.ERROR):
        batch.add(_ended(1))
    assert ran == []
    assert "1 ended turns left unacknowledged (the broker keeps them)" in caplog.text
    batch.add(_ended(2))  # the next one is tried again, not stuck behind the first
    assert "1 ended turns left unacknowledged" in caplog.text
