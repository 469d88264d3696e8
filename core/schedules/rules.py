"""Recurrence rules: what people type → a cron expression in a time zone, and the slots
it gives. Cron through ``croniter``; plain words ("every weekday at 9:00", "every 2
hours", "every Monday at 8:30") through ``recurrent`` (words → an RFC 5545 RRULE), turned
into the cron expression they mean; time zones through ``zoneinfo``. Nothing here
reads a clock: every function takes the time it works from.
"""

from __future__ import annotations

import itertools
import warnings
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.config_schedules import ScheduleSettings
from core.types.schedules import NotUnderstood, Rule

if TYPE_CHECKING:
    from croniter import croniter

# croniter and recurrent (with parsedatetime) are imported on first use, not with this
# module: every Celery worker imports it at start-up (core.runs.firings) and most never
# read a schedule: ~1 MB of each worker's memory.

EXAMPLES = (
    "Try words like “every weekday at 9:00”, “every Monday at 8:30”, “every 2 hours”, "
    "or a cron expression such as “0 9 * * 1-5”."
)
_DAYS = {"MO": 1, "TU": 2, "WE": 3, "TH": 4, "FR": 5, "SA": 6, "SU": 0}


def zone(name: str) -> ZoneInfo | None:
    """The time zone called ``name`` ("Europe/Paris", "UTC"), or None if there is none."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return None


def parse(words: str, tz: str | None, settings: ScheduleSettings) -> Rule | NotUnderstood:
    """``words`` (cron or plain words) and the time zone ``tz`` (default: the
    configured one) as a :class:`Rule`, or a hint in plain words."""
    text = " ".join(words.split())
    tz_name = (tz or settings.default_tz).strip()
    if not text:
        return NotUnderstood(words, f"Say when it should run. {EXAMPLES}")
    if len(text) > settings.max_words_chars:
        limit = settings.max_words_chars
        return NotUnderstood(text, f"That is longer than {limit} characters. {EXAMPLES}")
    if zone(tz_name) is None:
        return NotUnderstood(
            text, f"I do not know the time zone “{tz_name}”: use a name like Europe/Paris or UTC."
        )
    cron = text if _is_cron(text) else _words_to_cron(text, settings.default_time)
    if cron is None:
        return NotUnderstood(text, f"I could not read “{text}” as a schedule. {EXAMPLES}")
    rule = Rule(words=text, cron=cron, tz=tz_name)
    gap = shortest_gap(rule, 0.0)
    if gap < settings.min_interval_s:
        return NotUnderstood(
            text,
            f"“{text}” would run every {_duration(gap)}; the shortest allowed here is "
            f"every {_duration(settings.min_interval_s)}.",
        )
    return rule


def _croniter() -> type[croniter]:
    from croniter import croniter

    return croniter


def _is_cron(text: str) -> bool:
    return len(text.split()) == 5 and bool(_croniter().is_valid(text))


def _words_to_cron(text: str, default_time: str) -> str | None:
    """The cron expression of plain words, through ``recurrent``'s RRULE; None if the
    words are no recurrence, or one cron cannot say ("every 3 weeks")."""
    from recurrent.event_parser import RecurringEvent

    try:
        with warnings.catch_warnings():
            # parsedatetime (under recurrent) warns about its own flag style on every use.
            warnings.simplefilter("ignore")
            found = RecurringEvent().parse(text)
    except Exception:  # the library's own parse errors on odd input
        return None
    if not isinstance(found, str) or not found.startswith("RRULE:"):
        return None
    parts = dict(p.split("=", 1) for p in found[len("RRULE:") :].split(";") if "=" in p)
    hour_d, minute_d = (int(x) for x in default_time.split(":"))
    freq, interval = parts.get("FREQ", ""), int(parts.get("INTERVAL", "1") or 1)
    minute = _one(parts.get("BYMINUTE"), minute_d)
    hour = _one(parts.get("BYHOUR"), hour_d)
    if minute is None or hour is None or interval < 1:
        return None
    if freq == "MINUTELY":
        return f"*/{interval} * * * *" if interval < 60 and 60 % interval == 0 else None
    if freq == "HOURLY":
        return (
            f"{_one(parts.get('BYMINUTE'), 0)} */{interval} * * *" if 24 % interval == 0 else None
        )
    if interval != 1:
        return None
    if freq == "DAILY":
        return f"{minute} {hour} * * *"
    if freq == "WEEKLY":
        days = [_DAYS.get(d[-2:]) for d in parts.get("BYDAY", "").split(",") if d]
        if not days or None in days:
            return None
        return f"{minute} {hour} * * {','.join(str(d) for d in sorted(set(days)))}"  # type: ignore[type-var]
    if freq == "MONTHLY" and parts.get("BYMONTHDAY", "").isdigit():
        return f"{minute} {hour} {int(parts['BYMONTHDAY'])} * *"
    return None


def _one(value: str | None, default: int) -> int | None:
    if value is None or value == "":
        return default
    return int(value) if value.isdigit() else None


def next_after(rule: Rule, at: float) -> float:
    """The first slot of ``rule`` strictly after ``at`` (unix time)."""
    tz = zone(rule.tz) or ZoneInfo("UTC")
    start = datetime.fromtimestamp(at, tz)
    return float(_croniter()(rule.cron, start).get_next(float))


def shortest_gap(rule: Rule, at: float, samples: int = 50) -> float:
    """The shortest time between two slots of ``rule`` among the next ``samples``."""
    tz = zone(rule.tz) or ZoneInfo("UTC")
    it = _croniter()(rule.cron, datetime.fromtimestamp(at, tz))
    slots = [float(it.get_next(float)) for _ in range(samples)]
    return min(b - a for a, b in itertools.pairwise(slots))


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        hours = int(seconds // 3600)
        return "hour" if hours == 1 else f"{hours} hours"
    minutes = max(1, round(seconds / 60))
    return "minute" if minutes == 1 else f"{minutes} minutes"


def when_shown(at: float, tz: str) -> str:
    """A slot as people read it in the schedule's time zone: "Mon 1 Dec 09:00 (UTC)"."""
    local = datetime.fromtimestamp(at, zone(tz) or ZoneInfo("UTC"))
    return f"{local:%a} {local.day} {local:%b %H:%M} ({tz})"
