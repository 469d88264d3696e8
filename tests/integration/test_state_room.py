"""The state room on a real Redis: a run is created by one script (its record, head and
index, or nothing, however many processes race to create it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.errors import UsageError
from core.state.keys import Keys
from core.state.store import Store
from core.types.run import RunState, RunStatus

pytestmark = pytest.mark.integration


def _store(real_redis: Any) -> Store:
    return Store(real_redis, Keys(real_redis.test_prefix), 1000)


async def test_racing_creations_of_one_run_leave_exactly_one(real_redis: Any) -> None:
    store = _store(real_redis)
    runs = [RunState(id="run_race", task=f"try {n}", created_at=float(n)) for n in range(8)]
    results = await asyncio.gather(*(store.create_run(r) for r in runs), return_exceptions=True)
    winners = [r for r, res in zip(runs, results, strict=True) if res is None]
    assert len(winners) == 1
    assert all(isinstance(res, UsageError) for res in results if res is not None)
    saved = await store.get_run("run_race")
    assert saved.task == winners[0].task
    keys = store.keys
    assert await real_redis.zscore(keys.runs_index(), "run_race") == winners[0].created_at
    assert (await store.run_head("run_race")).status is RunStatus.PROPOSED
