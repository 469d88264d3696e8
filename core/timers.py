"""Actions due later (question time-outs, reminders, proposals' expiry), kept in Redis,
fired by any process.

A timer is a member of one sorted set scored by when it is due. Every process that runs
turns also runs :func:`core.background.run_background`, which pops due timers — ZREM is
the claim, so each fires once even with many workers — and carries them out. Nothing is
held in a worker's memory, so a crashed worker loses no timer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from core.types._base import Frozen, new_id
from core.types.messages import HumanReply

if TYPE_CHECKING:
    from core.runtime import Services


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

_BATCH = 100


async def schedule(svc: Services, timer: Timer, at: float) -> None:
    await svc.redis.zadd(svc.store.keys.timers(), {TIMER.dump_json(timer).decode(): at})


async def unschedule(svc: Services, timer: Timer) -> None:
    """Forget ``timer`` (it must be the same value as scheduled, id included)."""
    await svc.redis.zrem(svc.store.keys.timers(), TIMER.dump_json(timer).decode())


async def fire_due(svc: Services, now: float | None = None) -> int:
    """Carry out every timer due by ``now``; returns how many this process fired."""
    key = svc.store.keys.timers()
    due: Any = await svc.redis.zrangebyscore(
        key, "-inf", now if now is not None else time.time(), start=0, num=_BATCH
    )
    fired = 0
    for raw in due:
        if not await svc.redis.zrem(key, raw):
            continue  # another process claimed it
        await _fire(svc, TIMER.validate_json(raw))
        fired += 1
    return fired


async def _fire(svc: Services, timer: Timer) -> None:
    from core.control import expire_if_due
    from core.turn_io import wake_agent

    if isinstance(timer, ExpireProposal):
        await expire_if_due(svc, timer.run_id)
        return
    if isinstance(timer, DeliverMessage):
        message = HumanReply(
            run_id=timer.run_id,
            sender=timer.author,
            recipient=timer.agent_id,
            body=timer.body,
            author=timer.author,
        )
        await svc.bus.deliver(timer.run_id, message)
    await wake_agent(svc, timer.run_id, timer.agent_id)
