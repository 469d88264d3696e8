"""``[governance]``: who may set budgets, the monthly budgets of channels and workspaces,
and how long the spend ledger keeps a month (``core.spend``, ``core.runs.spend``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class BudgetRule(BaseModel):
    """A budget from config: ``month_usd`` per UTC month, its owner's platform id and
    name (the one asked when a request would go over it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    month_usd: float = Field(ge=0)
    owner: str = ""
    owner_name: str = ""
    name: str = ""


class GovernanceSettings(BaseModel):
    """Spend governance. ``channels``/``workspaces``: budgets by place key
    (``slack:T0ACME:C0OPS`` / ``slack:T0ACME``); budgets set from chat by ``admins`` (or
    ``[approval] approvers``) are kept in Redis and win over these."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    admins: tuple[str, ...] = ()
    # A month's ledger is kept this many months after it ends (Redis TTL).
    months_kept: int = Field(13, ge=1, le=120)
    warn_at: float = Field(0.8, gt=0, le=1)
    # What a new request is assumed to cost when checking a budget before planning.
    request_estimate_usd: float = Field(0.0, ge=0)
    channels: dict[str, BudgetRule] = Field(default_factory=dict)
    workspaces: dict[str, BudgetRule] = Field(default_factory=dict)
    # The background loop folds ended runs into the ledger at most this many per pass.
    fold_batch: int = Field(200, ge=1, le=10_000)
    fold_every_s: float = Field(5.0, gt=0)
    # A report lists at most this many rows (its totals count them all).
    report_rows_max: int = Field(5000, ge=10, le=100_000)
    max_month_usd: float = Field(100_000.0, gt=0)
