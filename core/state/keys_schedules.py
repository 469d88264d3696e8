"""Redis key names of schedules, recurring cohorts (``core.state.schedules``): each
schedule, when each is due, the ones of a channel, a firing's claim, the firings for the
chat bots. A mixin of :class:`core.state.keys.Keys`; part of the state room
(``core.state``)."""

from __future__ import annotations


class ScheduleKeys:
    """The schedules' keys (``Keys`` has them all)."""

    prefix: str

    def schedule(self, schedule_id: str) -> str:
        """One schedule (``core.types.schedules.Schedule``, JSON)."""
        return f"{self.prefix}:schedule:{schedule_id}"

    def schedules(self) -> str:
        """Set of every schedule's id."""
        return f"{self.prefix}:schedules"

    def schedules_due(self) -> str:
        """Sorted set: schedule id scored by its next firing (unix time); paused ones out."""
        return f"{self.prefix}:schedules:due"

    def schedules_in(self, place_key: str) -> str:
        """Set of the schedule ids posting into one channel (``Place.key``)."""
        return f"{self.prefix}:schedules:in:{place_key}"

    def schedule_slot(self, schedule_id: str, slot: int) -> str:
        """Claimed (NX, with a TTL) by the one process that fires ``slot`` of a schedule."""
        return f"{self.prefix}:schedule:{schedule_id}:slot:{slot}"

    def schedule_firings(self) -> str:
        """Stream of firings for the chat bots to post (``core.state.schedules``)."""
        return f"{self.prefix}:schedules:firings"
