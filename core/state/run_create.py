"""Recording a new run: its record, its head, its place in the runs index (and in the runs
under way, when it is recorded started) and its first events, in one script — all of it,
or nothing if the run exists already.

Part of the state room (``core.state``); the store's ``create_run`` calls it. May call the
Redis client, ``core.state.keys`` and ``core.types``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from core.state.keys import Keys
from core.types.events import RunEvent
from core.types.run import RunState, RunStatus

# KEYS: the run's record, its head, the runs index, its events, the runs under way.
# ARGV: record, head, created at, run id, the events' cap (about), under way ("1" or "0"),
# then the events.
_CREATE_RUN = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
if ARGV[6] == '1' then redis.call('SADD', KEYS[5], ARGV[4]) end
for i = 7, #ARGV do
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[5], '*', 'event', ARGV[i])
end
return 1
"""

# The statuses a run is in the runs under way (the watchdog's list) with, as
# ``core.state.records.set_run`` keeps it; a new run is never terminal (nothing to remove).
_UNDER_WAY = frozenset({RunStatus.RUNNING, RunStatus.WAITING_HUMAN})


class RunCreator:
    """Records new runs on ``redis`` under ``keys`` (events capped near ``maxlen``)."""

    def __init__(self, redis: Redis, keys: Keys, maxlen: int) -> None:
        self.keys = keys
        self.maxlen = maxlen
        self._script = redis.register_script(_CREATE_RUN)

    async def __call__(self, run: RunState, events: Sequence[RunEvent] = ()) -> bool:
        """Record ``run`` with ``events`` (never its ``RunFinished``: a run's end goes
        through a change, which keeps the set of ended runs); False if it exists."""
        keys, rid = self.keys, run.id
        under_way = "1" if run.status in _UNDER_WAY else "0"
        args: list[Any] = [run.model_dump_json(), run.head().model_dump_json(), run.created_at]
        args += [rid, self.maxlen, under_way]
        # Each event dumped by its own class's serializer, as the event log does.
        args += [event.__pydantic_serializer__.to_json(event) for event in events]
        names = [keys.run(rid), keys.run_head(rid), keys.runs_index(), keys.events(rid)]
        return bool(await self._script(keys=[*names, keys.active_runs()], args=args))
