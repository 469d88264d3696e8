"""A change of a run's record, applied atomically in two round trips: a read (the record,
its head and the token of the last change saved), then one script that writes the new
record, its events and this change's token only if the head is still as read
(``core.state.recorded.UPDATE_SCRIPT``; the head's ``rev`` is new with every write of the
record, ``core.state.run_guard``). Otherwise the change is computed again on the record
as it is now. A change sent again after its reply was lost finds its token: applied,
not again (was: WATCH, a read, MULTI/EXEC — three round trips).

Part of the state room (``core.state``); the store (``Store.update_run``) calls it. May
call the Redis client, ``core.state.records``, ``core.state.recorded`` and
``core.state.durable_writes``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from core.errors import RunError
from core.state.durable_writes import replicated
from core.state.keys import Keys
from core.state.recorded import UPDATE_SCRIPT, recorded_args
from core.state.records import set_run
from core.state.run_changes import RunChange
from core.state.run_guard import checked
from core.types.events import RunEvent
from core.types.run import RunState

_MAX_ATTEMPTS = 20
_TOKEN_S = 600  # how long a run change's token is kept: longer than any retry takes

# Queues a run's events on a pipeline (``Store.add_events``).
AddEvents = Callable[[Any, str, list[RunEvent]], None]


class RunUpdater:
    """``Store.update_run``, on its Redis client and keys."""

    def __init__(self, redis: Any, keys: Keys, add_events: AddEvents) -> None:
        self.redis, self.keys, self.add_events = redis, keys, add_events
        self._script = redis.register_script(UPDATE_SCRIPT)

    async def __call__(self, run_id: str, change: RunChange, durable: bool) -> RunState | None:
        keys = self.keys
        key, mark, head_key = keys.run(run_id), keys.run_commit(run_id), keys.run_head(run_id)
        token = os.urandom(16).hex()
        new: RunState | None = None
        for _ in range(_MAX_ATTEMPTS):
            raw, saved_by, head = await self.redis.mget(key, mark, head_key)
            if saved_by == token:  # applied already: the script's reply was lost
                break
            if raw is None:
                raise RunError(f"unknown run {run_id}")
            new, events = change(RunState.model_validate_json(raw))
            if new is None and not events:
                return None
            recorder = self.redis.pipeline(transaction=False)
            if new is not None:
                set_run(recorder, keys, new)
            self.add_events(recorder, run_id, events)
            recorder.set(mark, token, ex=_TOKEN_S)
            guarded, held = checked(key, head_key, raw, head)
            args = [held or "", *recorded_args(recorder.command_stack)]
            if int(await self._script(keys=[guarded], args=args)) == 1:
                break
        else:
            raise RunError(f"run {run_id}: too much contention updating its state")
        if durable:  # (a person's decision: on redis.replicas_to_ack replicas)
            await replicated(self.redis, self.keys)
        return new
