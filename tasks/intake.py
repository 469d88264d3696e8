"""How many turn messages a worker takes from the broker: no more than its loop keeps up with.

With the ``loop`` dispatch (:mod:`tasks.dispatch`) a message taken starts its turn at once,
so kombu's prefetch limit (``celery.concurrency``) is the number of turns in flight. While
the turns wait on the model that is what it should be; but a worker whose event loop is
behind (its CPU saturated: more turns ready to run than it runs) gains nothing from taking
more — its rate is its CPU's — and each one it takes holds its state, its coroutines and
its message in memory (~50 KB a turn: at 1,000 turns in flight half the worker's peak),
and is kept from the workers with time to spare.

:class:`Intake` watches the loop's lag (how late a short sleep wakes up) and steers the
consumer's prefetch limit, TCP-like: while the lag stays above ``celery.intake_lag_high_s``
the limit stops at what the worker already holds and then shrinks by a sixteenth a tick
(at least one; never below ``celery.intake_floor``); while it stays below
``celery.intake_lag_low_s`` it grows by a sixteenth a tick back to ``celery.concurrency``.
While the worker holds fewer turns than the floor and the limit is Celery's there is
nothing to steer: the ticks stop until the turns held reach the floor
(the consumer's thread wakes them), so a worker with a few turns pays nothing for them.
A loop that is behind has a backlog of ready turns by definition,
so the limit never starves it. Only the prefetch limit moves: what was taken is run and
acknowledged as before, and what was not stays in the broker's queue (no acknowledgement,
redelivery or visibility timeout changes).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from core.config_sections import CelerySettings

TICK_S = 0.05


class Intake:
    """The prefetch limit of one worker process's consumer, steered by its loop's lag:
    above ``high_s`` the worker takes no more turns, below ``low_s`` it takes more; never
    fewer in flight than ``floor`` (a loop behind because of one slow step)."""

    def __init__(self, high_s: float, low_s: float, floor: int) -> None:
        self.high_s, self.low_s, self.floor = high_s, low_s, floor
        self.limit = 0  # the prefetch limit Celery sets (concurrency × multiplier)
        self.target = 0
        self.taken = 0  # messages taken and not yet settled
        self._lock = threading.Lock()
        self._consumer: Any = None  # Celery's consumer
        self._qos: Any = None  # its qos when last steered (a new one on each reconnect)
        self._loop: asyncio.AbstractEventLoop | None = None  # the turns' loop, once run
        self._due = asyncio.Event()

    @classmethod
    def of(cls, celery: CelerySettings) -> Intake:
        """The intake ``[celery] intake_*`` sets."""
        return cls(celery.intake_lag_high_s, celery.intake_lag_low_s, celery.intake_floor)

    def attach(self, consumer: Any) -> None:
        """Steer ``consumer``'s prefetch limit (Celery's, built before its strategies)."""
        self._consumer = consumer
        self.limit = int(getattr(consumer, "max_prefetch_count", 0) or 0)

    def took(self) -> None:
        with self._lock:
            self.taken += 1
            crossed = self.taken == self.floor
        if crossed and self._loop is not None:  # (the consumer's thread) steering is due
            self._loop.call_soon_threadsafe(self._due.set)

    def settled(self, n: int = 1) -> None:
        with self._lock:
            self.taken -= n

    def resting(self) -> bool:
        """Nothing to steer: fewer turns held than the floor, the limit where Celery set
        it (the ticks stop: a worker with a few turns, or none, pays nothing for them)."""
        return self.taken < self.floor and (self.target == 0 or self.target >= self.limit)

    async def run(self) -> None:
        """Steer until cancelled (the turns' loop stops)."""
        loop = self._loop = asyncio.get_running_loop()
        while True:
            self._due.clear()
            if self.resting():
                await self._due.wait()  # set when the turns held reach the floor
            start = loop.time()
            await asyncio.sleep(TICK_S)
            self.steer(loop.time() - start - TICK_S)

    def steer(self, lag_s: float) -> None:
        """One tick: the loop woke ``lag_s`` late."""
        qos = getattr(self._consumer, "qos", None)
        if qos is None or not self.limit:
            return  # not consuming yet, or no prefetch limit (Celery's 0: unlimited)
        if qos is not self._qos:  # a new connection's qos: start from where Celery set it
            self._qos, self.target = qos, min(self.limit, int(qos.value))
        target = self.target
        if lag_s > self.high_s:
            target = max(self.floor, min(target, self.taken) - max(1, target // 16))
        elif lag_s < self.low_s and target < self.limit:
            target = min(self.limit, target + max(4, target // 16))
        delta = target - self.target
        if delta > 0:
            qos.increment_eventually(delta)
            # The consumer applies a new limit in its next round: wake it now (it may be
            # asleep, holding all it may hold).
            self._consumer.call_soon(_nothing)
        elif delta < 0:
            qos.decrement_eventually(-delta)
        self.target = target


def _nothing() -> None:
    pass
