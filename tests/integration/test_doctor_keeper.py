"""caramba doctor's call keeper row, against real Redis: off, on with none alive, on with
one alive (its heartbeat key), and nothing in embedded mode."""

from __future__ import annotations

import uuid

import pytest

from core.process.doctor_keeper import check_keeper
from core.process.doctor_types import Level
from core.state.keys import Keys
from tests.conftest import REDIS_URL, make_settings

pytestmark = pytest.mark.integration


async def test_the_keeper_row_says_whether_one_is_alive(real_redis) -> None:
    prefix = f"doctor-keeper-{uuid.uuid4().hex[:6]}"
    settings = make_settings(redis={"url": REDIS_URL, "key_prefix": prefix})

    none = await check_keeper(settings)
    assert none is not None and none.level is Level.OK and "none alive now" in none.detail

    await real_redis.set(Keys(prefix).llm_keepers(), "host-42-abc", px=5000)
    try:
        alive = await check_keeper(settings)
        assert alive is not None and alive.detail == "on: host-42-abc is alive"
    finally:
        await real_redis.delete(Keys(prefix).llm_keepers())

    off = await check_keeper(
        make_settings(redis={"url": REDIS_URL, "key_prefix": prefix}, llm={"keeper": False})
    )
    assert off is not None and off.level is Level.WARN and "llm.keeper = true" in off.fix

    assert await check_keeper(make_settings()) is None  # embedded: no workers, no keeper
