"""Actions due later (question time-outs, reminders, proposals' expiry), kept in Redis,
fired by any process.

A timer is a member of one sorted set scored by when it is due. Every process that runs
turns also runs the background loop (``core.process.background``), which pops due timers
— ZREM is the claim, so each fires once even with many workers — and carries them out.
Nothing is held in a worker's memory, so a crashed worker loses no timer. The set itself
is the state room's (``core.state.timers``, ``svc.store.timers``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from core.services import Services
from core.types._base import Frozen, new_id


class _TimerBase(Frozen):
    id: str = Field(default_factory=lambda: new_id("tmr"))
    run_id: str
    agent_id: str


class WakeAgent(_TimerBase):
    """Give a waiting agent a turn (it then notices, e.g., that its question expired)."""

    kind: Literal["wake"] = "wake"


class DeliverMessage(_TimerBase):
    """Put a message in an agent's inbox and wake it (a reminder, a follow-up)."""

    kind: Literal["deliver"] = "deliver"
    body: str
    author: str = "reminder"


class ExpireProposal(_TimerBase):
    """Cancel a proposal nobody decided on by its ``expires_at``."""

    kind: Literal["expire"] = "expire"
    agent_id: str = ""


Timer = Annotated[WakeAgent | DeliverMessage | ExpireProposal, Field(discriminator="kind")]
TIMER: TypeAdapter[Timer] = TypeAdapter(Timer)


async def schedule(svc: Services, timer: Timer, at: float) -> None:
    await svc.store.timers.add(TIMER.dump_json(timer).decode(), at)


async def unschedule(svc: Services, timer: Timer) -> None:
    """Forget ``timer`` (it must be the same value as scheduled, id included)."""
    await svc.store.timers.remove(TIMER.dump_json(timer).decode())
