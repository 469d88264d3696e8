"""Where each run is shown in a chat platform: the thread of a run (replies there reach its
agents), how far the run's relay got — a restarted bot resumes every relay where it stopped
instead of losing the run's progress or posting it twice — and which bot process relays
it (a lease, so several processes never relay one run twice). Kept in the chat layer's
store (``bots.chat.store``)."""

from __future__ import annotations

from bots.chat.ports import Place
from bots.chat.store import ChatStore, Lease
from core.types._base import Frozen

DEDUPE_TTL_S = 3600
# How long a thread stays linked to its run (answers to agents' questions arrive there).
THREAD_TTL_S = 7 * 24 * 3600


class Shown(Frozen):
    """A run being relayed into ``channel``/``thread``; ``last``: the last event relayed;
    ``status_ts``: the status message a relay from before the outbox posted."""

    run_id: str
    channel: str
    thread: str
    last: str = "0-0"
    status_ts: str | None = None

    @property
    def place(self) -> Place:
        return Place(self.channel, self.thread)


def after(entry_id: str, last: str) -> bool:
    """Whether stream id ``entry_id`` comes after ``last`` ("ms-seq" ids)."""
    a, _, b = entry_id.partition("-")
    c, _, d = last.partition("-")
    return (int(a), int(b or 0)) > (int(c), int(d or 0))


class Threads:
    """One platform's threads and relays, in its chat ``store``."""

    def __init__(self, store: ChatStore) -> None:
        self.store, self.keys = store, store.keys

    async def first_time(self, event_id: str) -> bool:
        """True once per ``event_id``: platforms retry a slow delivery with the same id."""
        return await self.store.once(self.keys.event(event_id), DEDUPE_TTL_S)

    async def link(self, shown: Shown) -> None:
        """Show ``shown.run_id`` in its thread from now on."""
        relay = shown.model_dump_json()
        await self.store.link(shown.run_id, shown.channel, shown.thread, relay, THREAD_TTL_S)

    async def run_in(self, channel: str, thread: str) -> str | None:
        return await self.store.get(self.keys.thread(channel, thread))

    async def save(self, shown: Shown) -> None:
        await self.store.save_relay(shown.run_id, shown.model_dump_json())

    async def done(self, run_id: str) -> None:
        await self.store.drop_relay(run_id)

    # -- leases: one bot process relays each run --------------------------------------

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> Lease | None:
        """Hold ``run_id`` for ``owner`` for ``ttl_s`` (renewed with ``renew``): the lease,
        or None while another holder's lease lives (a lapsed one is free)."""
        return await self.store.claim(run_id, owner, ttl_s)

    async def renew(self, leases: dict[str, Lease]) -> list[str]:
        """Extend each lease (run id → lease) to its full time again; returns the runs
        whose lease lapsed or was taken over meanwhile (this process stalled longer than
        the lease). Each renewal checks the holder and extends in one step in Redis (a
        lease another process took stays theirs), all of them in one script call
        (measured: 4 µs of CPU per lease and round; 21 µs for a pipeline of reacquires;
        one reacquire call per lease, gathered, ran the connection pool out past about
        100 leases)."""
        return await self.store.renew(leases)

    @staticmethod
    async def holds(lease: Lease) -> bool:
        """Whether ``lease`` is still its holder's (not lapsed, not taken over)."""
        return await ChatStore.holds(lease)

    @staticmethod
    async def release(lease: Lease) -> None:
        """Give the run up; a lease that lapsed or was taken over meanwhile is left as is."""
        await ChatStore.release(lease)

    async def unfinished(self) -> list[Shown]:
        """Relays a previous bot process left running."""
        return [Shown.model_validate_json(v) for v in (await self.store.relays()).values()]

    async def unheld(self, skip: set[str]) -> list[Shown]:
        """The unfinished relays nobody holds a lease on (but those in ``skip``)."""
        return [Shown.model_validate_json(v) for v in (await self.store.unheld(skip)).values()]
