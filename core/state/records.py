"""How runs and agents are laid out in Redis: a run is its record (JSON) plus its head
(status, pause, budget, deadline: what every turn reads, cheap to parse), always written
together; an agent is one hash ``{seq, status, spec, state}``; usage is a hash of
counters.

Part of the state room (``core.state``): the write helpers queue commands on the caller's
transaction; nothing here sends a command by itself. May call ``core.state.keys`` and
``core.types``."""

from __future__ import annotations

from typing import Any, NamedTuple

from core.state.keys import Keys
from core.state.turn_start import StartReply
from core.types.agent import AgentState
from core.types.chat import Usage
from core.types.run import RunHead, RunState, RunStatus


def set_run(pipe: Any, keys: Keys, run: RunState) -> None:
    """Write the run's record and its head (in the caller's transaction), and keep it in
    the set of runs under way while it is (the watchdog's list)."""
    pipe.set(keys.run(run.id), run.model_dump_json())
    pipe.set(keys.run_head(run.id), run.head().model_dump_json())
    if run.status in (RunStatus.RUNNING, RunStatus.WAITING_HUMAN):
        pipe.sadd(keys.active_runs(), run.id)
    elif run.status.terminal:
        pipe.srem(keys.active_runs(), run.id)


def parse_head(raw: Any) -> RunHead | None:
    """The head from its JSON; None when there is none (a run recorded before heads
    existed, or created by a process that died between its two writes: read the record)."""
    return None if raw is None else RunHead.model_validate_json(raw)


def parse_usage(raw: Any) -> Usage:
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens", 0)),
        completion_tokens=int(raw.get("completion_tokens", 0)),
        cost_usd=float(raw.get("cost_usd", 0.0)),
    )


def agent_fields(state: AgentState) -> dict[Any, Any]:
    return {
        "seq": state.seq,
        "status": state.status.value,
        "spec": state.spec.model_dump_json(),
        # Read by the turn's start script (which streams to drain) without the spec.
        "team": state.spec.team_id or "",
        "state": state.model_dump_json(),
    }


class TurnStart(NamedTuple):
    """What a turn reads first, in one round trip."""

    state: AgentState | None
    run: RunHead
    deliveries: int
    # Of the earlier deliveries, how many raised (the rest that did not save: their worker
    # died under them).
    failures: int
    run_usage: Usage
    # The model's answer saved by an earlier delivery of this turn (JSON), if any.
    saved_response: str | None
    # The script's reply: the mail it read, the follow-ups a late copy redoes.
    reply: StartReply
