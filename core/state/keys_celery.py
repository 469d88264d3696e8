"""Redis key names of the Celery scheduler: the ledger of turn jobs published and held
(``core.state.ledger``) and the broker's own keys (kombu's prefix, a queue's lists). A
mixin of :class:`core.state.keys.Keys`; part of the state room (``core.state``)."""

from __future__ import annotations


class CeleryKeys:
    """The Celery scheduler's keys (``Keys`` has them all)."""

    prefix: str

    def celery_ledger(self) -> str:
        """Sorted set: the turn jobs published and not yet held (``core.state.ledger``)."""
        return f"{self.prefix}:celery-ledger"

    def celery_ledger_held(self) -> str:
        """Sorted set: the turn jobs a worker holds, scored by when its hold lapses."""
        return f"{self.celery_ledger()}:held"

    def celery_broker(self) -> str:
        """kombu's ``global_keyprefix``: every broker key of the deployment starts with it."""
        return f"{self.prefix}:celery:"

    def celery_queue_lists(self, queue: str) -> list[str]:
        """The broker's Redis lists of ``queue``: kombu keeps priority p > 0 in
        ``{queue}\\x06\\x16{p}`` (priorities 3, 6, 9 with the default steps)."""
        base = self.celery_broker() + queue
        return [base + suffix for suffix in ("", "\x06\x163", "\x06\x166", "\x06\x169")]
