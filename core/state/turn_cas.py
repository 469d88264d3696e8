"""A turn's save that changes the run's record too (the root's end ends the run, a run at
a limit pauses, a question opens): the change is computed from the record as read, and the
save script applies it only if the record (and, for the totals a run's end reports, the
run's usage) is still as read (``core.state.run_guard``): a compare-and-set. The record is
read by the root's turn start (``core.state.turn_start``): its end is then one round trip,
the save script alone. Any other agent's save, or one whose record moved meanwhile, reads
it first (one read script: the agent's seq, the save token and follow-ups record, the
run's record and its usage), then saves: two round trips, again while it moves.

Part of the state room (``core.state``); called by ``core.state.turns``. May call the
Redis client, ``core.state.records``, ``core.state.run_guard`` and
``core.state.turn_script``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from core.errors import RunError
from core.state.kept import RunRead
from core.state.records import parse_usage, set_run
from core.state.run_changes import RunChange
from core.state.run_guard import checked, guard_args
from core.state.turn_script import (
    TOKEN_FIELD,
    AfterSave,
    Commit,
    Saved,
    parse_jobs,
)
from core.types.agent import AgentState
from core.types.chat import Usage
from core.types.events import RunEvent
from core.types.run import RunState

if TYPE_CHECKING:
    from core.state.turns import PipelineWrite, Turns

_MAX_CAS_ATTEMPTS = 20


class TotalsChange:
    """A run change made from the run's usage with this turn's (the totals its end
    reports), as read with the run's record (and guarded as the record is)."""

    def __init__(self, make: Callable[[Usage], RunChange]) -> None:
        self.make = make


# KEYS: the agent's hash, the run's record, its head, its usage.
READ_SCRIPT = f"""
local a = redis.call('HMGET', KEYS[1], 'seq', '{TOKEN_FIELD}', 'followup_jobs')
return {{a[1], a[2], a[3], redis.call('GET', KEYS[2]), redis.call('GET', KEYS[3]),
  redis.call('HGETALL', KEYS[4])}}
"""


async def commit_with_run_change(
    turns: Turns,
    state: AgentState,
    expected_seq: int,
    token: str,
    events: list[RunEvent],
    usage: Usage,
    run_change: RunChange | TotalsChange,
    writes: Sequence[PipelineWrite],
    after: AfterSave | None,
) -> Saved:
    run_id, keys = state.run_id, turns.keys
    akey, hkey, ukey = (
        keys.agent(run_id, state.spec.id),
        keys.run_head(run_id),
        keys.run_usage(run_id),
    )
    read = turns.kept.run_read(run_id)
    for _ in range(_MAX_CAS_ATTEMPTS):
        if read is None:
            reply: Any = await turns.read_for_change(keys=[akey, keys.run(run_id), hkey, ukey])
            current, saved_by, record, raw, head, raw_usage = reply
            if current is None or int(current) != expected_seq:
                if saved_by == token:
                    return Saved(Commit.SAVED_BEFORE, parse_jobs(record, expected_seq))
                await turns.release(after)
                return Saved(Commit.STALE, [])
            pairs = raw_usage or []
            read = RunRead(raw, head, dict(zip(pairs[::2], pairs[1::2], strict=True)))
        totals = isinstance(run_change, TotalsChange)
        change = (
            run_change.make(parse_usage(read.usage) + usage)
            if isinstance(run_change, TotalsChange)
            else run_change
        )
        new_run: RunState | None = None
        run_events: list[RunEvent] = []
        if read.record is not None:
            new_run, run_events = change(RunState.model_validate_json(read.record))
        recorder = turns.redis.pipeline(transaction=False)
        turns.turn_writes(recorder, state, [*events, *run_events], usage, writes)
        if new_run is not None:
            set_run(recorder, keys, new_run)
        held = checked(keys.run(run_id), hkey, read.record, read.head)
        guard = guard_args(*held, (ukey, read.usage) if totals else None)
        argv, before = turns.script_argv(state, expected_seq, token, recorder, after, guard=guard)
        lease = turns.lease_key(after)
        saved = await turns.commit_script(keys=[akey, lease], args=argv, before=before)
        if Commit.of(saved) is not Commit.MOVED:
            return Saved(Commit.of(saved), parse_jobs(saved[1], expected_seq))
        read = None  # the run moved (another writer): read it again
    raise RunError(f"run {run_id}: too much contention saving agent {state.spec.id}")
