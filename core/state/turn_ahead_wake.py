"""A recipient's turn started by the save that woke it, on the inline scheduler (embedded
mode): a message to a waiting agent makes the sender's save claim its wake-up, and the
inline scheduler runs that turn at once when it has a free slot. The save script then also
runs the recipient's start script (``core.state.turn_start``: its lease taken, its delivery
counted, its head, usage and mail read: ``WAKE_LUA``), so that its turn starts with no round
trip of its own — as a worker's chain does for an agent's own next turn
(``core.state.turn_ahead``). The agent's own next turn is started by its save the same
way (the save script's ``ahead`` branch, with no ledger ride), when the save schedules
nothing else.

Only when the save schedules that wake-up alone (no new agent, no next turn of its own, no
other recipient), or its own next turn alone, and a slot is free (:class:`WakeStarts`'
``room``). The start is kept in
the process (:class:`WakeStarts`) until the recipient's turn takes it
(``core.agent.lease``, through the :data:`AHEAD` offer of the scheduler's slot it runs on).
A start no turn takes is released (its lease goes, its delivery uncounted: ``let_go``):
one made by a turn that raised after its save (its jobs may never be scheduled: the turn's
retry finds the save and redoes the follow-ups never counted), one whose job ended without
taking it, one that waited too long (:meth:`Ahead.fresh`), and all of them when the
scheduler stops. A dying process leaves them to lapse (``LEASE_S``), counted as deliveries
that died, as for any turn whose process died under it; mail read is pending for the
recipient until a save acknowledges it.

Part of the state room (``core.state``); may call the Redis client the turns are given,
``core.state.turn_ahead``/``turn_script``/``records`` and the :class:`Turns` that saves."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from core.state.turn_ahead import AHEAD, Ahead, AheadOffer
from core.state.turn_script import AfterSave
from core.types.agent import AgentState

if TYPE_CHECKING:
    from core.scheduler.base import TurnJob
    from core.state.turns import Turns

Key = tuple[str, str, int]


class WakeStarts:
    """The starts this process's saves made of the turns they woke, until taken.
    ``room``: whether the scheduler would run a turn submitted now at once (the lease and
    mail cap of a start are the save's: ``AfterSave.ahead``)."""

    def __init__(self, room: Callable[[], bool]) -> None:
        self.room = room
        self.kept: dict[Key, Ahead] = {}

    async def run(self, job: TurnJob, turn: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``job``'s turn (``turn``) with this process's offer (:data:`AHEAD`)."""
        offer = WakeOffer(self)
        reset = AHEAD.set(offer)
        try:
            return await turn()
        except BaseException:
            await offer.discard()
            raise
        finally:
            AHEAD.reset(reset)
            await self._tidy((job.run_id, job.agent_id, job.seq))

    async def _tidy(self, done: Key) -> None:
        """Let go the start of a job that ended without taking it, and the stale ones."""
        left = self.kept.pop(done, None)
        if left is not None:
            await left.release()
        now = time.monotonic()
        for key, ahead in list(self.kept.items()):
            if not ahead.fresh(now) and self.kept.pop(key, None) is ahead:
                await ahead.release()

    async def discard(self) -> None:
        """The scheduler stopped: no start is taken any more."""
        kept, self.kept = self.kept, {}
        for ahead in kept.values():
            await ahead.release()


class WakeOffer(AheadOffer):
    """One inline turn's offer: its save may start the turn it wakes (kept in
    :class:`WakeStarts`); its own start is taken from there."""

    def __init__(self, starts: WakeStarts) -> None:
        super().__init__()
        self.starts = starts
        self.made: list[Ahead] = []

    def take(self, run_id: str, agent_id: str, seq: int) -> Ahead | None:
        return self.starts.kept.pop((run_id, agent_id, seq), None)

    async def discard(self) -> None:
        """The turn raised: the starts its save made and no turn took yet go."""
        made, self.made = self.made, []
        for ahead in made:
            key = (ahead.run_id, ahead.agent_id, ahead.seq)
            if self.starts.kept.get(key) is ahead:
                del self.starts.kept[key]
                await ahead.release()

    def keep(self, ahead: Ahead) -> None:
        """The agent's own next turn, started by its save (``turn_ahead.keep_start``)."""
        self.starts.kept[(ahead.run_id, ahead.agent_id, ahead.seq)] = ahead
        self.made.append(ahead)

    def started(self, state: AgentState) -> bool:
        return any(ahead.start.state is state for ahead in self.made)

    def argv(
        self, turns: Turns, state: AgentState, token: str, after: AfterSave | None, ride: Any
    ) -> list[Any]:
        """As the chain's offer (:meth:`AheadOffer.start_argv`), when the scheduler would
        run the turn at once (no ride: the inline scheduler holds no ledger)."""
        return self.start_argv(turns, state, token, after) if self.starts.room() else []
