"""tasks.intake: the prefetch limit follows the turns' loop's lag, within its bounds."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from kombu.common import QoS

from core.config import load_settings
from core.config_sections import CelerySettings
from core.errors import ConfigError
from tasks.app import make_app
from tasks.intake import Intake
from tasks.scheduler import TURN_TASK

# The defaults of ``[celery] intake_*``.
DEFAULTS = CelerySettings()
HIGH_S, LOW_S, FLOOR = DEFAULTS.intake_lag_high_s, DEFAULTS.intake_lag_low_s, DEFAULTS.intake_floor


class _Consumer:
    def __init__(self, limit: int) -> None:
        self.max_prefetch_count = limit
        self.qos = QoS(lambda **_: None, limit)
        self.woken = 0

    def call_soon(self, p: Any) -> None:
        self.woken += 1


def _intake(limit: int, taken: int) -> tuple[Intake, _Consumer]:
    consumer = _Consumer(limit)
    intake = Intake.of(DEFAULTS)
    intake.attach(consumer)
    for _ in range(taken):
        intake.took()
    return intake, consumer


def test_a_loop_behind_takes_no_more_than_it_holds_then_less() -> None:
    intake, consumer = _intake(1000, 300)
    intake.steer(HIGH_S * 2)
    assert consumer.qos.value == intake.target == 300 - 1000 // 16
    intake.steer(HIGH_S * 2)
    assert consumer.qos.value == 300 - 1000 // 16 - (300 - 1000 // 16) // 16
    for _ in range(200):
        intake.steer(HIGH_S * 2)
    assert consumer.qos.value == FLOOR


def test_a_loop_keeping_up_takes_more_again_up_to_celerys_limit() -> None:
    intake, consumer = _intake(1000, 300)
    intake.steer(HIGH_S * 2)
    intake.steer((LOW_S + HIGH_S) / 2)  # in between: the limit stays
    assert consumer.qos.value == 300 - 1000 // 16
    for _ in range(200):
        intake.steer(0.0)
    assert consumer.qos.value == intake.target == 1000
    assert consumer.woken > 0  # the consumer is woken to take more


def test_a_new_connection_starts_from_celerys_limit() -> None:
    intake, consumer = _intake(500, 100)
    intake.steer(HIGH_S * 2)
    consumer.qos = QoS(lambda **_: None, 500)  # reconnected
    intake.steer(0.0)
    assert consumer.qos.value == intake.target == 500


def test_messages_settled_are_no_longer_counted() -> None:
    intake, consumer = _intake(100, 50)
    for _ in range(50):
        intake.settled()
    assert intake.taken == 0
    intake.steer(HIGH_S * 2)
    assert consumer.qos.value == FLOOR


async def test_a_worker_holding_fewer_turns_than_the_floor_does_not_tick() -> None:
    intake, _consumer = _intake(1000, FLOOR - 1)
    steered: list[float] = []
    intake.steer = steered.append  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(intake.run())
    try:
        await asyncio.sleep(0.2)
        assert steered == []  # resting: no tick while it holds fewer than the floor
        taker = threading.Thread(target=intake.took)  # (the consumer's thread)
        taker.start()
        taker.join()
        await asyncio.sleep(0.2)
        assert len(steered) >= 2  # the floor reached: it steers every tick
    finally:
        task.cancel()


def test_the_thresholds_and_floor_are_the_settings() -> None:
    settings = load_settings(
        celery={"intake_lag_high_s": 1.0, "intake_lag_low_s": 0.5, "intake_floor": 8}
    )
    celery = settings.celery
    consumer = _Consumer(100)
    intake = Intake.of(celery)
    intake.attach(consumer)
    for _ in range(50):
        intake.took()
    intake.steer(HIGH_S * 2)  # late by the default's measure, not by this worker's
    assert consumer.qos.value == 100
    for _ in range(100):
        intake.steer(2.0)
    assert consumer.qos.value == 8
    intake.steer(0.7)  # between this worker's low and high: the limit stays
    assert consumer.qos.value == 8


def test_a_low_lag_not_below_the_high_one_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"intake_lag_low_s \(0\.1\) must be below"):
        load_settings(celery={"intake_lag_high_s": 0.1, "intake_lag_low_s": 0.1})


def test_a_worker_app_steers_its_intake_with_the_settings() -> None:
    settings = load_settings(
        redis={"url": "redis://127.0.0.1:6379/15"},
        celery={"intake_lag_high_s": 0.5, "intake_lag_low_s": 0.1, "intake_floor": 8},
    )
    dispatch = make_app(settings).tasks[TURN_TASK].Strategy.__self__
    intake = dispatch.intake
    assert (intake.high_s, intake.low_s, intake.floor) == (0.5, 0.1, 8)
