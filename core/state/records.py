"""How runs and agents are laid out in Redis: a run is its record (JSON) plus its head
(status, pause, budget, deadline: what every turn reads, cheap to parse), always written
together (the head with a new ``rev``); an agent is one hash ``{seq, status, spec,
team, …}`` and its state (JSON) under a key of its own; usage is a hash of counters.

Part of the state room (``core.state``): the write helpers queue commands on the caller's
transaction; nothing here sends a command by itself. May call ``core.state.keys`` and
``core.types``."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from pydantic import TypeAdapter

from core.state.keys import Keys
from core.state.turn_start import StartReply
from core.types.agent import AgentSpec, AgentState
from core.types.chat import ChatMessage, Usage
from core.types.grown import Grown
from core.types.run import RunHead, RunState, RunStatus


def set_run(pipe: Any, keys: Keys, run: RunState) -> None:
    """Write the run's record and its head (in the caller's transaction), and keep it in
    the set of runs under way while it is (the watchdog's list)."""
    pipe.set(keys.run(run.id), run.model_dump_json())
    # (a new rev each time: the head changes with any change of the record, run_guard)
    pipe.set(keys.run_head(run.id), run.head(rev=os.urandom(8).hex()).model_dump_json())
    if run.status in (RunStatus.RUNNING, RunStatus.WAITING_HUMAN):
        pipe.sadd(keys.active_runs(), run.id)
    elif run.status.terminal:
        pipe.srem(keys.active_runs(), run.id)


# Heads this process parsed, by their JSON: a run's head changes seldom (its status, a
# pause, an extension) and every turn reads it. A head is frozen: one may be shared.
_HEADS: dict[Any, RunHead] = {}
_HEADS_MAX = 256


def parse_head(raw: Any) -> RunHead | None:
    """The head from its JSON; None when there is none (a run recorded before heads
    existed, or created by a process that died between its two writes: read the record)."""
    if raw is None:
        return None
    head = _HEADS.get(raw)
    if head is None:
        head = RunHead.model_validate_json(raw)
        if len(_HEADS) >= _HEADS_MAX:
            _HEADS.clear()
        _HEADS[raw] = head
    return head


def parse_usage(raw: Any) -> Usage:
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens", 0)),
        completion_tokens=int(raw.get("completion_tokens", 0)),
        cost_usd=float(raw.get("cost_usd", 0.0)),
    )


# The JSON of specs this process saved, by the spec's identity (the spec itself kept with
# it, so that its id is never another's): an agent's spec never changes (frozen), and
# every save writes it twice, alone and inside the state.
_SPECS: dict[int, tuple[AgentSpec, str]] = {}
_SPECS_MAX = 256  # (as many as the agents whose state a process holds, core.state.kept)


def spec_json(spec: AgentSpec) -> str:
    """``spec.model_dump_json()``, dumped once per spec."""
    known = _SPECS.get(id(spec))
    if known is not None and known[0] is spec:
        return known[1]
    text = spec.model_dump_json()
    if len(_SPECS) >= _SPECS_MAX:
        _SPECS.clear()
    _SPECS[id(spec)] = (spec, text)
    return text


def state_json(state: AgentState, spec: str) -> str:
    """``state.model_dump_json()`` with the spec's JSON (``spec``) already made: the spec
    is the state's first field; the thread's JSON is made anew for its new messages only
    (``thread_json``)."""
    rest = state.model_dump_json(exclude=_NOT_STATE)  # '{"run_id":…,"seq":4,"usage":…}'
    # The thread comes before ``usage``: a JSON string holds no bare '"', so the first
    # ',"usage":' is the field's.
    cut = rest.index(_USAGE)
    return f'{{"spec":{spec},{rest[1:cut]},"thread":{thread_json(state.thread)}{rest[cut:]}'


_NOT_STATE = {"spec", "thread"}
_USAGE = ',"usage":'
_THREAD = TypeAdapter(list[ChatMessage])
# The JSON of threads this process saved (all messages but the last, joined by commas), by
# the list's identity. The last message is dumped anew each time: the turn that appended
# it may have set its images since.
_THREADS: Grown[str] = Grown()


def thread_json(thread: list[ChatMessage]) -> str:
    """``'[' + the thread's messages' JSON + ']'``, as the state's dump writes it."""
    n = len(thread) - 1
    seen = _THREADS.since(thread, thread, n)
    done, body = seen if seen is not None else (0, "")
    if n > done:
        more = _THREAD.dump_json(thread[done:n]).decode()[1:-1]
        body = f"{body},{more}" if body else more
    if n > 0:
        _THREADS.keep(thread, thread[:n], body)
    if n < 0:
        return "[]"
    last = thread[n].model_dump_json()
    return f"[{body},{last}]" if body else f"[{last}]"


def agent_fields(state: AgentState, *, created: bool = False) -> dict[Any, Any]:
    """The agent hash's fields for a save of ``state`` (its state itself goes to its own
    key: :func:`state_text`); with ``created``, those its creation writes too: its spec
    (read without the state by the bus, the watchdog, the listings) and team (read by the
    turn's start script, which streams to drain). A spec never changes (frozen): a turn's
    save does not write them again."""
    fields: dict[Any, Any] = {"seq": state.seq, "status": state.status.value}
    if created:
        fields["spec"], fields["team"] = spec_json(state.spec), state.spec.team_id or ""
    return fields


def state_text(state: AgentState) -> str:
    """The agent's state as saved at ``Keys.agent_state``."""
    return state_json(state, spec_json(state.spec))


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
