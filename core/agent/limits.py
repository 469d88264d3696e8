"""The limits an agent's turn checks: its own (turns, tokens, cost) and its run's.

An agent's own budget ends it (``lifecycle.end_agent``). A run's budget does not kill
agents mid-work: the run pauses in ``waiting_human`` with a ``budget_reached`` event and
each agent parks at its next turn, holding no worker, until a person extends the budget
or stops the run (``core.runs.budget``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from core.config import Settings
from core.scheduler.base import TurnJob
from core.services import Services
from core.state import parking
from core.state.store import RunChange, transition
from core.types.agent import AgentState
from core.types.chat import ChatMessage, ToolCall, Usage
from core.types.events import BudgetReached, RunEvent, RunStatusChanged
from core.types.figures import cost, number, tokens
from core.types.grown import Grown
from core.types.run import SYSTEM, RunHead, RunState, RunStatus


@dataclass(frozen=True)
class AgentLimits:
    max_turns: int
    max_tokens: int
    max_cost_usd: float


def limits_for(settings: Settings, state: AgentState) -> AgentLimits:
    """The agent's own budget where it has one, else the configured defaults."""
    b, d = state.spec.budget, settings.limits
    # Both are frozen: the answer is theirs, made once (kept with them, so that their ids
    # are never another pair's).
    known = _LIMITS.get((id(b), id(d)))
    if known is not None and known[0] is b and known[1] is d:
        return known[2]
    found = AgentLimits(
        max_turns=b.max_turns or d.turns_per_agent,
        max_tokens=b.max_tokens or d.tokens_per_agent,
        max_cost_usd=b.max_cost_usd if b.max_cost_usd is not None else d.cost_per_run_usd,
    )
    if len(_LIMITS) >= _LIMITS_MAX:
        _LIMITS.clear()
    _LIMITS[(id(b), id(d))] = (b, d, found)
    return found


_LIMITS: dict[tuple[int, int], tuple[object, object, AgentLimits]] = {}
_LIMITS_MAX = 256


class Breach(NamedTuple):
    """A run limit that was reached: which one ("tokens", "cost", "wall_clock") and how."""

    what: str
    detail: str


def breach(run: RunHead, usage: Usage, now: float) -> Breach | None:
    """Which run limit is reached, if any."""
    budget = run.budget
    if budget is None:
        return None
    if usage.total_tokens >= budget.tokens:
        return Breach(
            "tokens", f"the run used {number(usage.total_tokens)} of {tokens(budget.tokens)}"
        )
    if usage.cost_usd >= budget.cost_usd:
        return Breach("cost", f"the run spent {cost(usage.cost_usd)} of {cost(budget.cost_usd)}")
    if run.deadline_at is not None and now >= run.deadline_at:
        return Breach(
            "wall_clock", f"the run reached its wall-clock limit of {budget.wall_clock_s:.0f} s"
        )
    return None


def pause_change(svc: Services, found: Breach, usage: Usage, seen: RunHead) -> RunChange:
    """Pause a running run at its limit and ask people to extend it (or stop it).

    ``found`` was judged against ``seen``, the run as the turn read it: a person who
    extended the run since (a new budget or deadline) made it stale, and the run is not
    paused again on it (the agent's next turn judges the new limits)."""
    humans = svc.settings.humans

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if run.paused or run.status not in (RunStatus.RUNNING, RunStatus.WAITING_HUMAN):
            return None, []
        if run.budget != seen.budget or run.deadline_at != seen.deadline_at:
            return None, []
        events: list[RunEvent] = [
            BudgetReached(
                run_id=run.id,
                what=found.what,  # type: ignore[arg-type]
                detail=found.detail,
                tokens=usage.total_tokens,
                cost_usd=usage.cost_usd,
                extend_tokens=humans.extend_tokens,
                extend_cost_usd=humans.extend_cost_usd,
                extend_wall_clock_s=humans.extend_wall_clock_s,
            )
        ]
        new = run.model_copy(deep=True)
        if run.status is RunStatus.RUNNING:
            new = transition(run, RunStatus.WAITING_HUMAN, by=SYSTEM, note=found.detail).run
            events.append(
                RunStatusChanged(
                    run_id=run.id, status=RunStatus.WAITING_HUMAN, by=SYSTEM, note=found.detail
                )
            )
        new.paused = found.what
        return new, events

    return change


async def hold(
    svc: Services, job: TurnJob, found: Breach | None, usage: Usage, seen: RunHead
) -> bool:
    """Pause the run at the limit ``found`` (if any: it may be paused already; judged
    against ``seen``) and park the agent's turn; False if the run is not paused (it
    resumed meanwhile, or was extended before ``found`` could pause it)."""
    if found is not None:
        await svc.store.update_run(job.run_id, pause_change(svc, found, usage, seen))
    return await park(svc, job.run_id, job.agent_id)


async def park(svc: Services, run_id: str, agent_id: str) -> bool:
    """Hold an agent's turn while the run is paused; False if the run resumed meanwhile.

    The agent joins the parked set *before* re-reading the run, and a resume clears the
    pause *before* reading the set, so no agent is parked after its run resumed.
    """
    # A waiting agent was woken to park: its wake-up claim is released for the resume.
    await parking.park(svc.store, run_id, agent_id)
    run = await svc.store.get_run(run_id)
    if run.paused and not run.status.terminal:
        return True
    await parking.unpark(svc.store, run_id, agent_id)
    return False


def prompt_chars(messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> int:
    """The size of a request's prompt in characters. Its messages are counted once: the
    agent's thread only grows, so the messages of its last request (all but the last one,
    which may be a note for that request alone), found again in the same places, count
    what they counted then."""
    first = messages[0] if messages else None
    n = len(messages) - 1
    seen = _PROMPTS.since(first, messages, n)
    done, chars = seen if seen is not None else (0, 0)
    chars += _messages_chars(messages[done:n])
    if n > 0:
        _PROMPTS.keep(first, messages[:n], chars)
    if n >= 0:
        chars += _messages_chars(messages[n:])
    for t in tools:
        chars += _tool_chars(t)
    return chars


# By the first message's identity: the messages counted and their size.
_PROMPTS: Grown[int] = Grown()


def _messages_chars(messages: Sequence[ChatMessage]) -> int:
    chars = 0
    for m in messages:
        if m.content:
            chars += len(m.content)
        for c in m.tool_calls:
            chars += len(c.arguments or "") + len(c.name)
    return chars


# A tool's size by its "function" part, which every request shares (``Tool.openai_schema``:
# built once, never changed), kept with it so that its id is not another's later.
_TOOL_CHARS: dict[int, tuple[object, int]] = {}
_TOOL_CHARS_MAX = 1024


def _tool_chars(tool: dict[str, Any]) -> int:
    function = tool.get("function")
    known = _TOOL_CHARS.get(id(function))
    if known is not None and known[0] is function and len(tool) == 2:
        return known[1]
    chars = len(json.dumps(tool))
    if function is not None and len(tool) == 2 and len(_TOOL_CHARS) < _TOOL_CHARS_MAX:
        _TOOL_CHARS[id(function)] = (function, chars)
    return chars


def estimate_prompt(chars: int, sample: tuple[int, int] | None) -> int:
    """The next prompt's tokens, scaled from the agent's last call (tokens counted by the
    provider for so many characters); 0 before its first call, whose answer the call's
    own bound limits."""
    if sample is None or sample[1] <= 0:
        return 0
    tokens, sample_chars = sample
    return tokens * chars // sample_chars + 1


def note_call(recent: list[str], call: ToolCall, repeats: int) -> bool:
    """The stall detector: record the call's signature; True when the last ``repeats``
    calls are identical. No tool is exempt (an agent calling ``roster`` for ever is
    stuck); the turn forgets the calls whenever messages arrive, so waiting again after
    each message, or looking at the roster again once something changed, is progress."""
    try:
        args = _SORTED.encode(_DECODER.decode(call.arguments or "{}"))
    except json.JSONDecodeError:
        args = call.arguments
    recent.append(f"{call.name}({args})")
    tail = recent[-repeats:]
    return len(tail) == repeats and len(set(tail)) == 1


# ``json.dumps(json.loads(text), sort_keys=True)``, the coder made once (``json.dumps``
# makes one per call when given options).
_SORTED = json.JSONEncoder(sort_keys=True)
_DECODER = json.JSONDecoder()
