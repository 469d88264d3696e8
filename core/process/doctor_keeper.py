"""``caramba doctor``: the call keeper (``llm.keeper``, on by default) — whether one is
alive now in the deployment's Redis, so that a model answer in flight outlives a worker."""

from __future__ import annotations

from core.config import Settings
from core.process.doctor_types import Check, Level
from core.state.keys import Keys
from core.state.reach import keeper_alive


async def check_keeper(settings: Settings) -> Check | None:
    """None in embedded mode (no workers: turns call the model directly)."""
    if settings.redis.embedded:
        return None
    if not settings.llm.keeper:
        return Check(
            "call keeper",
            Level.WARN,
            "off (llm.keeper = false): a worker killed while the model answers pays for "
            "the call again",
            "set llm.keeper = true (the default); caramba worker then runs one per host",
        )
    try:
        name = await keeper_alive(settings.redis, Keys(settings.redis.key_prefix))
    except Exception:
        return None  # the redis row already says why
    if name:
        return Check("call keeper", Level.OK, f"on: {name} is alive")
    return Check(
        "call keeper",
        Level.OK,
        "on; none alive now: caramba worker starts one beside its workers (until then "
        "workers call the model themselves)",
    )
