"""When a turn is given up: quarantined rather than delivered again.

Deliveries of a turn that did not save it ended one of two ways, counted apart at turn
start (``Store.turn_start``): the turn *raised* (a bug, a tool that keeps breaking: it will
most likely raise again), or its worker *died* under it (killed, out of memory, a deploy).
A death is weak evidence against the turn — workers die for reasons of their own, and a
crash loop elsewhere hits whatever turn a fresh worker takes first — so deaths get a
larger budget (``limits.max_crashes``) than failures (``limits.max_deliveries``); a turn
that takes down every worker it reaches is still stopped.

Counted are the deliveries of the turn that reached it (``core.state.turn_start``): a copy
of a turn the agent has not reached yet — its job outlived a save a Redis failover lost —
does nothing and is not counted against that turn. A delivery that ends without a save and
without an error (woken with nothing to read) is counted with the deaths: a wake-up that
keeps finding nothing is a loop the quarantine stops too. Not so a delivery woken by mail
while a call of the turn waits for a person's approval (``approvals.still_waiting``): the
wait is deliberate and may be long, each message wakes it once, and each such delivery is
counted apart (``waits``) — only a delivery that got that far is, so one whose worker died
before is still a death.
"""

from __future__ import annotations

from core.config_sections import LimitSettings


def quarantine_reason(
    limits: LimitSettings, seq: int, deliveries: int, failures: int, waits: int = 0
) -> str | None:
    """Why delivery number ``deliveries`` of turn ``seq`` (``failures`` earlier ones raised,
    ``waits`` found its call still waiting for approval) must not run, or None. The other
    earlier deliveries that did not save died."""
    deaths = max(0, deliveries - 1 - failures - waits)
    if failures >= limits.max_deliveries:
        return (
            f"turn {seq} failed {failures} times without being saved "
            f"(limit {limits.max_deliveries}, limits.max_deliveries); quarantined"
        )
    if deaths >= limits.max_crashes:
        return (
            f"turn {seq} was delivered {deliveries} times without being saved: its worker "
            f"died under it {deaths} times (limit {limits.max_crashes}, limits.max_crashes); "
            "quarantined"
        )
    return None
