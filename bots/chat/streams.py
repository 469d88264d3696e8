"""Streaming a run's result into its thread, where the platform can (Slack's
``chat.startStream`` / ``appendStream`` / ``stopStream``): the port a transport adds to
:class:`~bots.chat.ports.Transport` to do it.

The relay of a platform whose transport is a :class:`Streamer` queues a completed run's
result as one outbox entry of kind ``stream`` (``bots.chat.outbox``), rendered as one
message (``Result.streamed``): its text, streamed in pieces, and its payload, ending the
stream (Slack: the feedback buttons). Its fallback (``Entry.instead``) is the result
posted as usual, so a platform or a thread that refuses to stream still gets it. The
courier (``bots.chat.courier``) delivers it like any entry: tried again while the
platform is unreachable, the streamer keeping its progress under the entry's id so that
a try after a failure (or a crash) goes on where the last one stopped instead of
streaming it twice; refused for good, the streamer :meth:`~Streamer.abandon` s what it
had streamed and the fallback is posted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bots.chat.ports import Payload, Place


@dataclass(frozen=True)
class Streamed:
    """A message of run ``run`` to stream: ``text`` (rendered) and ``payload`` (what ends
    it). ``key`` is the same on every try (the outbox entry's id): progress goes under it."""

    run: str
    key: str
    text: str
    payload: Payload = None


@runtime_checkable
class Streamer(Protocol):
    """A transport that streams messages (checked with ``isinstance``)."""

    async def stream(self, place: Place, streamed: Streamed) -> str:
        """Stream ``streamed`` into ``place``, going on from the progress kept under its
        key; the id of the message. Raises like the transport's other calls."""
        ...

    async def abandon(self, place: Place, streamed: Streamed) -> None:
        """The stream was refused for good: remove what of it reached the thread (its
        fallback is posted instead) and its progress. Never raises."""
        ...

    async def forget_stream(self, streamed: Streamed) -> None:
        """Drop the progress kept for ``streamed`` (delivered)."""
        ...
