"""What the background loop (``core.process.background``) looks at first, in one round
trip: the soonest timer, whether the intents stream holds anything not yet taken, whether
runs wait to be recorded in the library (or claims to be looked at), and whether the
watchdog's round is free. A tick then calls only the steps that may find work (each of
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


async def probe(store: Store) -> Probe:
    """The soonest timer and which steps may find work, in one pipelined round trip."""
    keys, pipe = store.keys, store.redis.pipeline(transaction=False)
    pipe.zrange(keys.timers(), 0, 0, withscores=True)
    pipe.xinfo_groups(keys.intents())
    pipe.scard(keys.ended_runs())
    pipe.hlen(keys.learning_claims())
    pipe.exists(keys.watchdog())
    timers, groups, ended, claims, round_held = await pipe.execute(raise_on_error=False)
    for reply in (timers, ended, claims, round_held):
        if isinstance(reply, Exception):
            raise reply
    soonest = float(timers[0][1]) if timers else None
    return Probe(soonest, _intents_waiting(groups), bool(ended or claims), not round_held)


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
