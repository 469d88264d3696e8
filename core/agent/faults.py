"""Fault points for crash tests: a process can be made to die (SIGKILL) at a named point.

Off unless the process was started with ``CARAMBA_FAULTS=1``; then each point costs one
Redis DECR. A test arms a point by setting its counter (:func:`key`) to N: the next N
processes (or passes) that reach it are killed on the spot, exactly like ``kill -9``.
Points in the turn: ``after_llm`` (the model answered, nothing saved), ``after_tools``
(tools ran, nothing saved), ``after_commit`` (saved, next turn not yet scheduled, intents
not yet processed); ``approved_call_kept`` (a call a person approved ran and its result
was kept, the turn not yet saved: ``core.agent.approvals``).
"""

from __future__ import annotations

import logging
import os
import signal
from typing import TYPE_CHECKING

from core.state import faults as counters
from core.state.keys import Keys

if TYPE_CHECKING:
    from core.services import Services

ENABLED = os.environ.get("CARAMBA_FAULTS", "") == "1"
POINTS = ("after_llm", "after_tools", "after_commit", "approved_call_kept")

log = logging.getLogger(__name__)


def key(prefix: str, name: str) -> str:
    """The counter a test sets to arm the point ``name``."""
    return Keys(prefix).fault(name)


async def point(svc: Services, name: str) -> None:
    if not ENABLED:
        return
    left = await counters.spend(svc.store, name)
    if left >= 0:
        log.warning("fault point %s armed: killing process %d", name, os.getpid())
        os.kill(os.getpid(), signal.SIGKILL)
