"""A turn's save that changes the run's record too (the root's end ends the run, a run at
a limit pauses, a question opens): the change is computed from the record read, so the
save is a compare-and-set. Three round trips: WATCH on the agent and the run; one read
script (the agent's seq, the save token and follow-ups record, the run's record and its
usage); then, in MULTI/EXEC, the save script itself (``core.state.turn_script``: the
recorded commands with the run's new record, the wake-up claims, the lease released).
A WATCH broken by another writer of the run is tried again.

Part of the state room (``core.state``); called by ``core.state.turns``. May call the
Redis client, ``core.state.records`` and ``core.state.turn_script``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from redis.exceptions import WatchError

from core.errors import RunError
from core.state.records import parse_usage, set_run
from core.state.run_changes import RunChange
from core.state.turn_script import (
    COMMIT_SCRIPT,
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
    reports), read in the save's own round trip."""

    def __init__(self, make: Callable[[Usage], RunChange]) -> None:
        self.make = make


_READ = f"""
local a = redis.call('HMGET', KEYS[1], 'seq', '{TOKEN_FIELD}', 'followup_jobs')
return {{a[1], a[2], a[3], redis.call('GET', KEYS[2]), redis.call('HGETALL', KEYS[3])}}
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
    akey, rkey = keys.agent(run_id, state.spec.id), keys.run(run_id)
    for _ in range(_MAX_CAS_ATTEMPTS):
        async with turns.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(akey, rkey)
                read: Any = await pipe.eval(_READ, 3, akey, rkey, keys.run_usage(run_id))
                current, saved_by, record, raw, raw_usage = read
                if current is None or int(current) != expected_seq:  # (reset unwatches)
                    if saved_by == token:
                        return Saved(Commit.SAVED_BEFORE, parse_jobs(record, expected_seq))
                    await turns.release(after)
                    return Saved(Commit.STALE, [])
                change = run_change
                if isinstance(change, TotalsChange):
                    pairs = raw_usage or []
                    so_far = parse_usage(dict(zip(pairs[::2], pairs[1::2], strict=True)))
                    change = change.make(so_far + usage)
                new_run: RunState | None = None
                run_events: list[RunEvent] = []
                if raw is not None:
                    new_run, run_events = change(RunState.model_validate_json(raw))
                recorder = turns.redis.pipeline(transaction=False)
                turns.turn_writes(recorder, state, [*events, *run_events], usage, writes)
                if new_run is not None:
                    set_run(recorder, keys, new_run)
                argv = turns.script_argv(state, expected_seq, token, recorder, after)
                pipe.multi()
                # The script's text, not its digest: a pipeline would first ask whether it
                # is loaded (one more round trip). The WATCH keeps seq and the run as read.
                pipe.eval(COMMIT_SCRIPT, 2, akey, turns.lease_key(after), *argv)
                (reply,) = await pipe.execute()
                return Saved(Commit.of(reply), parse_jobs(reply[1], expected_seq))
            except WatchError:
                continue  # the run key moved (another agent); re-check and retry
    raise RunError(f"run {run_id}: too much contention saving agent {state.spec.id}")
