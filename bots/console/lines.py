"""What the person types: one reader of stdin for the whole console session.

The proposal prompt, the questions of a running cohort, cancel and the budget choice all
read lines from the same place. One reader thread owns stdin and hands every line to the
event loop, so a line piped ahead of time is never lost to a reader that gave up, and the
run's live display keeps going while the console waits for words. ``None`` means the
input ended (a closed pipe, Ctrl-D).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import TextIO, cast


class Lines:
    """Lines in the order they were typed; ``None`` once input ended. A reader may give
    lines back (:meth:`unread`): the next reader gets them first."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._back: deque[str] = deque()
        self._ended = False
        self.closed = threading.Event()

    def put(self, line: str | None) -> None:
        """A line typed (without its newline), or None: input ended."""
        self._queue.put_nowait(line)

    async def get(self) -> str | None:
        if self._back:
            return self._back.popleft()
        if self._ended:
            return None
        line = await self._queue.get()
        self._ended = line is None
        return line

    def unread(self, lines: Sequence[str]) -> None:
        """Give ``lines`` back, to be read again first, in their order."""
        self._back.extendleft(reversed(lines))

    def prompt_stream(self) -> TextIO:
        """A file-like ``readline`` for rich's ``Prompt.ask(stream=...)``, asked in a
        worker thread while the loop runs."""
        return cast(TextIO, PromptStream(self, asyncio.get_running_loop()))

    def close(self) -> None:
        """Wake a prompt still waiting for a line: it reads the end of input."""
        self.closed.set()


class StdinLines(Lines):
    """Reads ``stream`` (stdin) line by line in a daemon thread; never blocks the loop.
    Start it on the running loop (:meth:`start`)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self._stream = stream if stream is not None else sys.stdin
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> StdinLines:
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, name="caramba-stdin", daemon=True).start()
        return self

    def _read(self) -> None:
        assert self._loop is not None
        while True:
            try:
                line = self._stream.readline()
            except (OSError, ValueError):  # stdin closed under us
                line = ""
            typed = line.rstrip("\r\n") if line else None
            try:
                self._loop.call_soon_threadsafe(self.put, typed)
            except RuntimeError:  # the loop is closed: nobody listens any more
                return
            if typed is None:
                return


class PromptStream:
    """``readline`` for a prompt asked in a worker thread: the next line from the loop."""

    def __init__(self, lines: Lines, loop: asyncio.AbstractEventLoop) -> None:
        self._lines = lines
        self._loop = loop

    def readline(self) -> str:
        """The next line; EOFError once input ended (as ``input()`` does): no answer is
        not an empty answer, which would take the prompt's default (an approval)."""
        future = asyncio.run_coroutine_threadsafe(self._lines.get(), self._loop)
        while True:
            try:
                line = future.result(timeout=0.2)
            except concurrent.futures.TimeoutError:
                if self._lines.closed.is_set():  # shutting down
                    future.cancel()
                    raise EOFError from None
                continue
            if line is None:
                raise EOFError
            return line + "\n"
