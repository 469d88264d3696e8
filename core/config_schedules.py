"""``[schedules]``: recurring cohorts (``core.schedules``, ``core.runs.schedules``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ScheduleSettings(BaseModel):
    """Limits of schedules. ``overlap``: a firing due while the last one still runs is
    ``skip``ped or ``queue``d until it ends; ``missed``: firings missed while no process
    ran are made up ``once`` (never once per slot)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_per_channel: int = Field(10, ge=1, le=1000)
    min_interval_s: float = Field(300.0, ge=1)
    default_budget_usd: float = Field(1.0, gt=0)
    max_budget_usd: float = Field(20.0, gt=0)
    default_tz: str = "UTC"
    # When words name a day but no time ("every Monday").
    default_time: str = Field("09:00", pattern=r"^\d{1,2}:\d{2}$")
    overlap: Literal["skip", "queue"] = "skip"
    missed: Literal["once"] = "once"
    # How long a claim on a firing slot is kept (longer than any clock skew between hosts).
    claim_ttl_s: int = Field(86_400, ge=60)
    # The firings stream the bots read is capped at about this many entries.
    firings_maxlen: int = Field(10_000, ge=100)
    max_words_chars: int = Field(200, ge=10)
    # The most due schedules one tick of the background loop looks at (the rest: the
    # next ticks; one that could not fire goes behind the others, so none is starved).
    max_per_tick: int = Field(100, ge=1, le=10_000)
