"""Rate limits on the fake Discord: 429s a test injects (``FakeDiscord.rate_limit``), and
optional per-channel message buckets (``FakeDiscord(message_limit=(5, 5.0))``: creates and
edits each limited to N per window per channel) answered with Discord's ``X-RateLimit-*``
headers, so discord.py waits before it overflows, as it does on Discord."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.fakes.discord_records import Request

BUCKETED_ROUTES = ("create_message", "edit_message")


@dataclass
class Injected:
    """The next ``times`` calls of ``route`` (matching ``where``) answer 429."""

    route: str
    times: int
    retry_after: float
    is_global: bool
    where: Callable[[Request], bool] | None


@dataclass
class Bucket:
    """A fixed window, as Discord's: ``limit`` calls, then wait until it resets."""

    limit: int
    window_s: float
    started: float = 0.0
    used: int = 0

    def take(self, now: float) -> float | None:
        """Count a call; the seconds to wait instead when the window is full."""
        if now - self.started >= self.window_s:
            self.started, self.used = now, 0
        if self.used >= self.limit:
            return self.window_s - (now - self.started)
        self.used += 1
        return None

    def headers(self, route: str, now: float) -> dict[str, str]:
        reset_after = max(0.0, self.window_s - (now - self.started))
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.limit - self.used),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": f"fake-{route}",
        }


@dataclass
class Limiter:
    injected: list[Injected] = field(default_factory=list)
    message_limit: tuple[int, float] | None = None
    buckets: dict[tuple[str, str], Bucket] = field(default_factory=dict)

    def check(self, rec: Request) -> tuple[int, dict[str, str], dict[str, object]] | None:
        """A 429 for this call (status, headers, body), or None to let it through."""
        for limit in self.injected:
            if limit.times > 0 and limit.route == rec.route:
                if limit.where is None or limit.where(rec):
                    limit.times -= 1
                    return too_many(limit.retry_after, limit.is_global)
        bucket = self.bucket(rec)
        if bucket is not None and (wait := bucket.take(time.monotonic())) is not None:
            return too_many(wait, False)
        return None

    def bucket(self, rec: Request) -> Bucket | None:
        if self.message_limit is None or rec.route not in BUCKETED_ROUTES:
            return None
        key = (rec.route, rec.params.get("channel_id", ""))
        if key not in self.buckets:
            self.buckets[key] = Bucket(*self.message_limit)
        return self.buckets[key]

    def headers(self, rec: Request) -> dict[str, str]:
        """``X-RateLimit-*`` for an answered call of a bucketed route."""
        bucket = self.bucket(rec)
        return {} if bucket is None else bucket.headers(rec.route, time.monotonic())


def too_many(retry_after: float, is_global: bool) -> tuple[int, dict[str, str], dict[str, object]]:
    # Without "Via" discord.py takes a 429 for a Cloudflare ban and raises.
    headers = {
        "Via": "1.1 google",
        "Retry-After": str(math.ceil(retry_after)),
        "X-RateLimit-Scope": "global" if is_global else "user",
    }
    if is_global:
        headers["X-RateLimit-Global"] = "true"
    body: dict[str, object] = {
        "message": "You are being rate limited.",
        "retry_after": round(retry_after, 3),
        "global": is_global,
    }
    return 429, headers, body
