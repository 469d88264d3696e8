"""The spend ledger's values: one row per run and model (:class:`SpendRow`), a month's
totals by channel, workspace, person, model and day (:class:`SpendReport`), and a
channel's or workspace's monthly budget with its owner (:class:`ChannelBudget`).

Months are UTC calendar months written ``2026-11``; days ``2026-11-27``. Keys of places
are :attr:`core.types.place.Place.key` (``slack:T0ACME:C0OPS``) and ``team_key``
(``slack:T0ACME``); a run asked without a place counts under ``UNPLACED``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.types._base import Frozen

# Where a run recorded without a place (the API, an older run) is counted.
UNPLACED = "unplaced"
MONTH_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])$"


class SpendRow(Frozen):
    """What one model (or the image model, or planning) cost one run, attributed to the
    run's channel, workspace and requester, on the day the run ended (UTC)."""

    month: str = Field(pattern=MONTH_PATTERN)
    day: str
    run_id: str
    channel_key: str
    channel_name: str = ""
    team_key: str
    team_name: str = ""
    requester_id: str
    requester_name: str = ""
    model: str
    cost_usd: float = Field(ge=0)


class SpendTotal(Frozen):
    """One line of a report: ``key`` (a place key, a person id, a model, a day), the name
    people read, and what it cost."""

    key: str
    name: str
    cost_usd: float


class ChannelBudget(Frozen):
    """A monthly budget of a channel (``scope="channel"``, ``place_key`` a channel's key)
    or of a workspace/guild (``scope="workspace"``, a ``team_key``): ``month_usd`` per UTC
    month; ``owner_id``/``owner_name`` approve a request over it; a warning is said when
    the month reaches ``warn_at`` of it."""

    place_key: str
    place_name: str = ""
    scope: Literal["channel", "workspace"] = "channel"
    month_usd: float = Field(ge=0)
    owner_id: str = ""
    owner_name: str = ""
    warn_at: float = Field(0.8, gt=0, le=1)


class BudgetUse(Frozen):
    """A budget and what its month holds so far (ended runs plus runs under way)."""

    budget: ChannelBudget
    spent_usd: float

    @property
    def share(self) -> float:
        """Spent as a share of the budget (1.0 = all of it; a zero budget is full)."""
        return self.spent_usd / self.budget.month_usd if self.budget.month_usd else 1.0


class SpendReport(Frozen):
    """A month's spend (``month``), possibly narrowed to a workspace or a channel: the
    total, totals by channel, workspace, person, model and day (largest first; days in
    order), the rows they sum, and the budgets that apply with their use."""

    month: str = Field(pattern=MONTH_PATTERN)
    team_key: str | None = None
    channel_key: str | None = None
    total_usd: float = 0.0
    # How many ended runs the total counts.
    runs: int = 0
    by_channel: tuple[SpendTotal, ...] = ()
    by_team: tuple[SpendTotal, ...] = ()
    by_person: tuple[SpendTotal, ...] = ()
    by_model: tuple[SpendTotal, ...] = ()
    by_day: tuple[SpendTotal, ...] = ()
    rows: tuple[SpendRow, ...] = ()
    # Rows left out of ``rows`` beyond [governance] report_rows_max (totals count them).
    rows_left_out: int = 0
    budgets: tuple[BudgetUse, ...] = ()
    # What runs not ended yet have spent so far (not in the totals above).
    under_way_usd: float = 0.0


__all__ = [
    "MONTH_PATTERN",
    "UNPLACED",
    "BudgetUse",
    "ChannelBudget",
    "SpendReport",
    "SpendRow",
    "SpendTotal",
]
