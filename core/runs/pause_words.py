"""The words for a run paused at its budget that every adapter shows, in one copy: the
figure an extension adds (``$2.00``, ``100,000 tokens``, ``15 min``) and who extended or
stopped the run (``core.runs.people.extend`` / ``stop``). Pure: no I/O."""

from __future__ import annotations

from core.config import HumansSettings
from core.runs.outcomes import Said
from core.types.figures import cost, tokens

STOP_LABEL = "Stop here"


def duration(seconds: float) -> str:
    """``2 h``, ``15 min``, ``40 s``."""
    if seconds >= 3600:
        return f"{seconds / 3600:g} h"
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:.0f} s"


def amount(what: str, usd: float, n_tokens: int, seconds: float) -> str:
    """The figure that matters for limit ``what``: ``$2.00``, ``200,000 tokens``,
    ``15 min``."""
    if what == "tokens":
        return tokens(n_tokens)
    return duration(seconds) if what == "wall_clock" else cost(usd)


def added(what: str, humans: HumansSettings) -> str:
    """What an extension (``core.runs.budget.extend_run``'s defaults) adds to the limit
    ``what`` that was reached."""
    h = humans
    return amount(what, h.extend_cost_usd, h.extend_tokens, h.extend_wall_clock_s)


def extended(name: str, figure: str) -> Said:
    """The pause once extended: ``▶ Extended by Alice: +$2.00``."""
    return Said("▶ Extended by ", name, f": +{figure}")


def stopped(name: str) -> Said:
    """The pause once stopped: ``■ Stopped by Alice, with the results so far``."""
    return Said("■ Stopped by ", name, ", with the results so far")
