"""What this process made of a list that only grows, kept to be extended rather than made
anew: an agent's thread is only appended to, so its saved JSON and its prompt's size need
only its new messages (``core.state.records.thread_json``, ``core.agent.limits``).

Kept by a key object's identity (the key kept with it, so that its id is not another's
later) with the items it was made of; found again only when each of those is the same
object in the same place (a message replaced is another object). Pure, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class Grown(Generic[V]):
    """Up to ``size`` lists' values (all forgotten when full)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._known: dict[int, tuple[object, Sequence[Any], V]] = {}

    def since(self, key: object, items: Sequence[Any], n: int) -> tuple[int, V] | None:
        """How many of ``items[:n]`` the value kept under ``key`` was made of, and that
        value; None when nothing is kept or the items are not the same."""
        known = self._known.get(id(key))
        if known is None or known[0] is not key:
            return None
        seen = known[1]
        if len(seen) > n or not all(map(is_, seen, items)):
            return None
        return len(seen), known[2]

    def keep(self, key: object, items: Sequence[Any], value: V) -> None:
        """Keep ``value``, made of ``items`` (a copy: the list goes on growing)."""
        if len(self._known) >= self.size and id(key) not in self._known:
            self._known.clear()
        self._known[id(key)] = (key, items, value)
