"""The turn lease's renewal: a timer that renews while the turn runs, and nothing after."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from core.agent import lease


class FakeLease:
    key = "lease-key"

    def __init__(self, fail: bool = False) -> None:
        self.renewals: list[int] = []
        self.fail = fail

    async def renew(self, ms: int) -> None:
        self.renewals.append(ms)
        if self.fail:
            raise ConnectionError("down")


def held(fake: FakeLease) -> Any:
    return SimpleNamespace(lease=fake, released=False)


async def test_renews_every_third_of_the_lease_until_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lease, "LEASE_S", 0.06)
    fake = FakeLease()
    renewal = lease._Renewal(held(fake), 60)
    await asyncio.sleep(0.1)
    renewal.stop()
    count = len(fake.renewals)
    assert count >= 2 and set(fake.renewals) == {60}
    await asyncio.sleep(0.06)
    assert len(fake.renewals) == count  # stopped: no more


async def test_a_failed_renewal_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease, "LEASE_S", 0.06)
    fake = FakeLease(fail=True)
    renewal = lease._Renewal(held(fake), 60)
    await asyncio.sleep(0.1)
    renewal.stop()
    assert len(fake.renewals) >= 2


async def test_a_released_lease_is_not_renewed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease, "LEASE_S", 0.03)
    fake = FakeLease()
    h = held(fake)
    h.released = True
    renewal = lease._Renewal(h, 30)
    await asyncio.sleep(0.05)
    renewal.stop()
    assert fake.renewals == []


async def test_one_timer_renews_every_held_lease_and_a_short_turn_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lease, "LEASE_S", 0.06)
    long, short, released = FakeLease(), FakeLease(), FakeLease()
    h = held(released)
    renewals = [lease._Renewal(held(long), 60), lease._Renewal(held(short), 60)]
    renewals.append(lease._Renewal(h, 60))
    assert len({id(r.renewals) for r in renewals}) == 1  # the loop's one set
    renewals[1].stop()  # a turn that ended before its first renewal was due
    await asyncio.sleep(0.03)
    h.released = True  # saved: its lease went with the save
    await asyncio.sleep(0.09)
    renewals[0].stop()
    assert len(long.renewals) >= 2
    assert short.renewals == []
    assert len(released.renewals) <= 1  # at most the one due before its release
    assert not renewals[0].renewals.live
    await asyncio.sleep(0.05)
    assert renewals[0].renewals.timer is None  # nothing held: the timer stops
