"""One delivery of a turn at a time: the delivery that runs it holds a short lease,
renewed while it works.

A broker hands a turn out again when a worker dies — and also when the turn is merely
slow (a visibility timeout), when the ledger publishes again a turn it thinks lost, or
after a chain. Those copies are not failures: a copy that finds the lease held waits for
it to be released or to lapse (its holder died: a lapse takes at most ``LEASE_S``) and
then runs the turn, or finds it done; if the holder is alive and still working after
the wait, the copy is dropped (the holder's own message stays with the broker until it
ends, so nothing is lost if the holder dies later). Only deliveries that hold the lease
count towards the quarantine (``core.agent.quarantine``): the count is of attempts that
ended without a save, not of copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

from core.services import Services
from core.state.leases import TurnLease

log = logging.getLogger(__name__)
LEASE_S = 5.0
_POLL_S = 0.1


@contextlib.asynccontextmanager
async def turn_lease(svc: Services, run_id: str, agent_id: str, seq: int) -> AsyncIterator[bool]:
    """Yields True while this delivery holds the turn's lease, False if another delivery
    is working on it (alive) for longer than a lapse would take."""
    # The token says who holds it, for a person looking at Redis.
    lease = TurnLease(svc.store, run_id, agent_id, seq, uuid.uuid4().hex)
    ms = int(LEASE_S * 1000)
    held = await lease.take(ms)
    waited = 0.0
    while not held and waited < LEASE_S + 1:
        await asyncio.sleep(_POLL_S)
        waited += _POLL_S
        held = await lease.take(ms)
    if not held:
        yield False
        return
    renew = asyncio.create_task(_renew(lease, ms), name=f"turn-lease-{agent_id}-{seq}")
    try:
        yield True
    finally:
        renew.cancel()
        # One round trip, not a compare-and-delete: should the lease have lapsed and been
        # taken meanwhile, freeing it lets at most one more copy in, and the save's
        # compare-and-set on seq still applies the turn once.
        with contextlib.suppress(Exception):
            await lease.release()


async def _renew(lease: TurnLease, ms: int) -> None:
    while True:
        await asyncio.sleep(LEASE_S / 3)
        try:
            await lease.renew(ms)
        except Exception as exc:
            log.warning("renewing the turn lease %s failed (%s); retrying", lease.key, exc)
