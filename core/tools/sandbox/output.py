"""What the sandboxed code printed, kept within a bound while it is read.

The first part and the last part of a stream are kept (a traceback comes last); what lies
between is counted, not stored, so a flood of output never grows memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

CHUNK = 64 * 1024


class Captured:
    """One stream (stdout or stderr): at most ``limit`` bytes kept, head and tail."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._head_limit = limit * 4 // 5
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail = (self._tail + chunk)[-self._tail_limit :]

    @property
    def cut(self) -> int:
        """Bytes printed but not kept."""
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if not self.cut:
            return head + tail
        return f"{head}\n[… {self.cut:,} bytes cut …]\n{tail}"


async def pump(
    stream: asyncio.StreamReader | None, into: Captured, on_data: Callable[[], None]
) -> None:
    """Read ``stream`` to its end into ``into``, calling ``on_data`` after each chunk
    (the runner checks for a flood there)."""
    if stream is None:
        return
    while chunk := await stream.read(CHUNK):
        into.feed(chunk)
        on_data()
