"""What the background loop (``core.process.background``) looks at first, in one round
trip: the soonest timer, whether the intents stream holds anything not yet taken, whether
runs wait to be recorded in the library (or claims to be looked at), whether the
watchdog's round is free, and (given the time) whether a schedule is due and when the
next one is. A tick then calls only the steps that may find work (each of
which reads its own keys again, as before): an idle tick is one round trip, not five or
six.

Only ever skips a step that would find nothing: an unknown answer (a stream or group not
there yet, a Redis whose ``XINFO GROUPS`` has no ``lag``) says "look".

Part of the state room, the only room that speaks Redis commands (``core.state``); it may
call the Redis client and keys of the store it is given, and ``core.state.intents`` (the
group's name)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from redis.exceptions import ResponseError

from core.state.intents import GROUP

if TYPE_CHECKING:
    from core.state.store import Store


class Probe(NamedTuple):
    """One look at the background loop's keys."""

    # When the soonest timer is due (``time.time()``), None if there is none.
    soonest: float | None
    # The intents stream may hold entries to take (new, or pending under a consumer).
    intents: bool
    # Runs wait to be recorded, or claims on recording them are held (maybe stale).
    learning: bool
    # Nobody holds the watchdog's round: this process may claim it.
    watchdog: bool
    # A schedule is due by the probe's ``now`` (or no ``now`` was given: "look").
    schedules_due: bool = True
    # When the soonest schedule due after ``now`` is (the loop wakes for it), if any.
    next_schedule: float | None = None


async def probe(store: Store, now: float | None = None) -> Probe:
    """The soonest timer and which steps may find work, in one pipelined round trip
    (with ``now``: whether a schedule is due by then, and the soonest one after it)."""
    keys, pipe = store.keys, store.redis.pipeline(transaction=False)
    pipe.zrange(keys.timers(), 0, 0, withscores=True)
    pipe.xinfo_groups(keys.intents())
    pipe.scard(keys.ended_runs())
    pipe.hlen(keys.learning_claims())
    pipe.exists(keys.watchdog())
    if now is not None:
        pipe.zrangebyscore(keys.schedules_due(), "-inf", now, start=0, num=1)
        pipe.zrangebyscore(keys.schedules_due(), f"({now!r}", "+inf", 0, 1, withscores=True)
    timers, groups, ended, claims, round_held, *due = await pipe.execute(raise_on_error=False)
    for reply in (timers, ended, claims, round_held, *due):
        if isinstance(reply, Exception):
            raise reply
    soonest = float(timers[0][1]) if timers else None
    looked = Probe(soonest, _intents_waiting(groups), bool(ended or claims), not round_held)
    if not due:
        return looked
    later = float(due[1][0][1]) if due[1] else None
    return looked._replace(schedules_due=bool(due[0]), next_schedule=later)


def _intents_waiting(groups: Any) -> bool:
    """False only when the processors' group is there with nothing pending under any
    consumer and nothing beyond what it has read (``lag`` 0)."""
    if isinstance(groups, ResponseError):  # no stream yet: taking creates the group
        return True
    if isinstance(groups, Exception):
        raise groups
    for group in groups or ():
        name = group.get("name")
        if (name.decode() if isinstance(name, bytes) else name) != GROUP:
            continue
        pending, lag = group.get("pending"), group.get("lag")
        return not (pending == 0 and lag == 0)
    return True
