"""What the courier (``bots.chat.courier``) tries when the platform refuses a message for
good: the ways of showing it, best first, so a refused post is replaced by a plainer one
rather than dropped.

For a message the platform refused (not one it failed to answer: that is tried again
with back-off, within ``outbox_max_age_s``):

1. as rendered, once more after a pause (a refusal seen once may not be the last word);
2. an edit refused (the message is gone, or cannot be edited any more): posted anew in
   the thread (the status message then lives on in the new one);
3. with a payload (Slack's blocks, Discord's embeds and buttons): as plain text;
4. in the channel, outside the thread (the thread may be gone); the run's later posts
   follow it there.

Only when every way is refused is the message dropped (an ERROR in the log, and a note in
the platform's drops, ``ChatStore.note_drop``). A post that brings its own fallback
(``Entry.instead``: the proposal card's "I could not post the proposal here") uses that
instead, and an upload its text in pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bots.chat.ports import Payload, Place, Transport

AS_RENDERED = "as rendered"
ONCE_MORE = "once more"
IN_THE_CHANNEL = "in the channel"


@dataclass(frozen=True)
class Way:
    """One way of showing a message: post ``text`` and ``payload`` into ``place``, or
    edit message ``edit`` there; ``how`` names it in the log."""

    how: str
    place: Place
    text: str
    payload: Payload = None
    edit: str | None = None

    async def show(self, transport: Transport) -> str:
        """Show it with ``transport``; the id of the message now showing it."""
        if self.edit is not None:
            await transport.update(self.place, self.edit, self.text, self.payload)
            return self.edit
        return await transport.post(self.place, self.text, self.payload)


def ways(place: Place, text: str, payload: Payload, edit: str | None = None) -> list[Way]:
    """The ways of showing a message (an edit of message ``edit``, else a post), best
    first."""
    first = Way(AS_RENDERED, place, text, payload, edit)
    out = [first, replace(first, how=ONCE_MORE)]
    if edit is not None:
        out.append(Way("posted anew", place, text, payload))
    if payload is not None:
        out.append(Way("as plain text", place, text))
    if place.thread and place.thread != place.channel:
        out.append(Way(IN_THE_CHANNEL, Place(place.channel, ""), text))
    return out


class Ladder:
    """How far down its ways the message at hand (``key``: an entry's id, or the status
    message) has gone."""

    def __init__(self) -> None:
        self.key, self.step = "", 0

    def at(self, key: str, options: list[Way]) -> Way:
        """The way to try now for ``key`` (a new message starts at the top)."""
        if key != self.key:
            self.key, self.step = key, 0
        return options[min(self.step, len(options) - 1)]

    def down(self, options: list[Way]) -> Way | None:
        """The next way after a refusal; None when every way was refused."""
        self.step += 1
        if self.step < len(options):
            return options[self.step]
        self.reset()
        return None

    def reset(self) -> None:
        self.key, self.step = "", 0
