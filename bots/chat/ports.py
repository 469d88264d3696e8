"""The ports of the shared chat layer: what a chat platform (Slack, Discord, the web chat)
gives it, and what it hands the platform.

The chat layer (``bots.chat``) follows each run and folds its events into **intentions**
— a status line, the proposal card, a milestone, a question, a note, a notification, an
agent's post, the result, the run's files — without knowing any platform. An adapter
plugs in three things, bundled as an :class:`Adapter`:

- a :class:`Renderer`: an intention → messages (text + a JSON payload: Slack Block Kit
  blocks, a Discord embed and components, an HTML-safe dict for the web), in the
  platform's markup, escaped, split at its message limit;
- a :class:`Transport`: posting, updating and uploading into a :class:`Place` (a channel
  and a thread), and saying what a failed call means (:meth:`Transport.classify` → a
  :class:`Failure`: try again later, or never);
- its :class:`Limits`, read from its section of ``config.toml`` (``[slack]``,
  ``[discord]``, …) with :meth:`Limits.of`.

An adapter's process then builds, over the core services ``svc``::

    adapter = Adapter("slack", "Slack", SlackRenderer(), SlackTransport(client, ...),
                      Limits.of(svc.settings.slack, message_chars=3000))
    threads = Threads(ChatStore.of(svc, adapter.platform))   # bots.chat.store
    relays = Relays(svc, adapter, threads)         # bots.chat.relays
    await relays.start()                           # take up runs earlier processes left

and, for each request asked in a thread (``bots.chat.intake``: the files fetched, the
request recorded by ``core.runs.people.request``), shows the run there::

    opened = await take_request(relays, task, person, place, fetch)
    # Opened: replies in the thread reach the run (threads.run_in), and its card, status,
    # milestones and result come through the outbox; NotOpened: the adapter says why.

and ``await relays.aclose()`` when it stops. Everything posted goes through the run's
durable outbox in Redis (``bots.chat.outbox``), delivered in order by the run's courier
(``bots.chat.courier``) with the transport; Redis keys live under
``{redis.key_prefix}:{platform}:`` (for Slack, the keys it always had). Buttons and
forms (approve, edit, cancel, feedback) stay the adapter's: the payloads carry the run id
where the platform needs it (a button's value, a ``custom_id``). A click is translated
into a ``core.types.people.Person`` and one call of the people room
(``core.runs.people``, where every rule is), whose outcome the adapter renders; a message
redrawn after it (a decided card) goes through ``bots.chat.redraw``, never straight to
the platform.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from bots.chat.intentions import (
    Artifacts,
    Card,
    ChatPost,
    Intention,
    Milestone,
    Note,
    Notify,
    OutFile,
    Question,
    Result,
    StatusLine,
)
from core.types._base import Frozen

__all__ = [
    "Adapter",
    "Artifacts",
    "Card",
    "ChatPost",
    "ChatSection",
    "Failure",
    "Files",
    "Intention",
    "Limits",
    "Milestone",
    "Note",
    "Notify",
    "OutFile",
    "Payload",
    "Place",
    "Question",
    "Rendered",
    "Renderer",
    "Result",
    "StatusLine",
    "TextFile",
    "Transport",
]

# What a renderer gives beside the text: Slack's blocks (a list), Discord's embeds and
# components (a dict), the web chat's dict; None for plain text. Stored as JSON.
Payload = list[dict[str, Any]] | dict[str, Any] | None


@dataclass(frozen=True)
class Place:
    """Where a run is shown: a channel and a thread in it (platform ids, as strings;
    Slack: the channel id and the thread's ``ts``; Discord: the thread's channel id for
    both, or the parent channel and the thread)."""

    channel: str
    thread: str


@dataclass(frozen=True)
class Failure:
    """What a failed platform call means. ``retry``: worth another try (the platform was
    unreachable, overloaded or rate limiting), else it refused the call itself;
    ``answered``: the platform answered (an HTTP error rather than no connection at all);
    ``wait_s``: how long it asked to wait (Retry-After); ``why``: for the log."""

    retry: bool
    answered: bool = True
    wait_s: float = 0.0
    why: str = ""


@dataclass(frozen=True)
class Rendered:
    """One message as the platform shows it: ``text`` (markup, escaped: also the
    notification text when there is a payload) and ``payload``."""

    text: str
    payload: Payload = None


# -- files ---------------------------------------------------------------------------------


class TextFile(Frozen):
    """A text uploaded into the thread as a file (a long result, an agent's post with a
    file name): its ``content`` as is (a file is not markup), and ``comment`` (rendered)
    posted with it, if the platform can."""

    content: str
    filename: str
    title: str
    comment: str = ""


@dataclass(frozen=True)
class Files:
    """Files of run ``run``'s workspace sent together as one message with ``comment``
    (rendered). ``key`` is the same on every try of the same upload (the outbox entry's
    id): a transport keeps its progress under it so that no try uploads twice."""

    run: str
    key: str
    files: tuple[OutFile, ...]
    comment: str = ""


# -- what a platform plugs in --------------------------------------------------------------


class Renderer(Protocol):
    """A platform's look: intentions → messages in its markup. Pure (no I/O)."""

    def escape(self, text: str) -> str:
        """``text`` (a person's or an agent's) safe to show: no markup, links or mass
        mentions (@channel, @everyone, @here) can come from it."""
        ...

    def bold(self, name: str) -> str:
        """A name (escaped here) in bold."""
        ...

    def split(self, text: str) -> list[str]:
        """Rendered ``text`` in pieces that each fit one message, at line breaks where
        possible."""
        ...

    def render(self, intention: Intention) -> list[Rendered]:
        """The messages showing ``intention``, in order (several when its text is longer
        than a message; a :class:`Result`'s buttons go on the last). A :class:`StatusLine`
        and a :class:`Card` are always one message."""
        ...


class Transport(Protocol):
    """A platform's calls into a thread. Each raises on failure (``classify`` says
    whether to try again); the courier calls them one at a time per run, in order."""

    async def post(self, place: Place, text: str, payload: Payload) -> str:
        """Post a message in ``place``; its id (to update it later)."""
        ...

    async def update(self, place: Place, message_id: str, text: str, payload: Payload) -> None:
        """Show new content in message ``message_id`` of ``place``."""
        ...

    async def upload(self, place: Place, file: TextFile) -> None:
        """Upload ``file`` into ``place`` (with its comment)."""
        ...

    async def send_files(self, place: Place, files: Files) -> None:
        """Upload ``files`` from the run's workspace as one message. Tried again after a
        failure or a crash (by another process, perhaps): keep progress under
        ``files.key`` so that files already sent are not sent again where the platform
        allows it."""
        ...

    async def forget_files(self, files: Files) -> None:
        """Drop the progress kept for ``files`` (delivered, or given up)."""
        ...

    def classify(self, exc: BaseException) -> Failure:
        """What ``exc`` (raised by one of the calls above) means for the outbox."""
        ...


class ChatSection(Protocol):
    """The keys every chat platform's section of ``config.toml`` has (``[slack]``, …)."""

    @property
    def status_interval_s(self) -> float: ...
    @property
    def result_file_chars(self) -> int: ...
    @property
    def relay_lease_s(self) -> float: ...
    @property
    def outbox_retry_max_s(self) -> float: ...
    @property
    def outbox_max_age_s(self) -> float: ...
    @property
    def outputs_max_files(self) -> int: ...
    @property
    def outputs_max_bytes(self) -> int: ...


@dataclass(frozen=True)
class Limits:
    """A platform's limits and pacing, as data.

    ``message_chars``: the most text one message shows (Slack: a section's 3,000; Discord:
    2,000); ``status_interval_s``: the status message is edited at most this often (edits
    in between are folded into the next); ``result_file_chars``: a longer result goes up
    as a file with a preview; ``outbox_retry_max_s`` / ``outbox_max_age_s``: the longest
    wait between tries, and how old an undelivered post gets before it is dropped;
    ``relay_lease_s``: how long a bot process holds a run it relays (renewed while it
    lives); ``outputs_max_files`` / ``outputs_max_bytes``: the run's files sent at its end.
    """

    message_chars: int
    status_interval_s: float = 1.0
    result_file_chars: int = 8000
    relay_lease_s: float = 3.0
    outbox_retry_max_s: float = 60.0
    outbox_max_age_s: float = 86_400
    outputs_max_files: int = 10
    outputs_max_bytes: int = 52_428_800

    @classmethod
    def of(cls, section: ChatSection, *, message_chars: int) -> Limits:
        """The limits set in a platform's section of ``config.toml``."""
        return cls(
            message_chars=message_chars,
            status_interval_s=section.status_interval_s,
            result_file_chars=section.result_file_chars,
            relay_lease_s=section.relay_lease_s,
            outbox_retry_max_s=section.outbox_retry_max_s,
            outbox_max_age_s=section.outbox_max_age_s,
            outputs_max_files=section.outputs_max_files,
            outputs_max_bytes=section.outputs_max_bytes,
        )


@dataclass(frozen=True)
class Adapter:
    """One chat platform, as the chat layer sees it. ``platform``: its key in Redis
    (``{prefix}:{platform}:…``) and in the code (``slack``, ``discord``, ``web``);
    ``name``: how logs call it ("Slack")."""

    platform: str
    name: str
    renderer: Renderer
    transport: Transport
    limits: Limits
