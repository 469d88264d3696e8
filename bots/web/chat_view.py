"""The web chat's thread as a person reads it: plain data for ``chat.html``. Each message
gets who said it (you, Caramba or an agent, by name) and when; the task shows once, as
your first message; lines that no longer hold are left out (a "Saved: … Approve to
start." once the proposal is decided, "Starting…" while the run waits for you); a
question says "(answer below)" only while it waits, and your answer follows it; the
run's status is said in words; every file the run wrote is offered once, at the end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from bots.web.chat_markdown import markdown
from bots.web.chat_transport import ChatMessage
from core.schedules.rules import when_shown
from core.types import figures
from core.types.run import RunState, RunStatus
from core.workspace import FileInfo

Side = Literal["you", "caramba", "agent"]
CARAMBA = "Caramba"
YOU = "You"

# A run's status as a person says it.
STATUS_WORDS: dict[RunStatus, str] = {
    RunStatus.PLANNING: "planning",
    RunStatus.PROPOSED: "waiting for your approval",
    RunStatus.APPROVED: "starting",
    RunStatus.RUNNING: "running",
    RunStatus.WAITING_HUMAN: "waiting for you",
    RunStatus.COMPLETED: "done",
    RunStatus.FAILED: "failed",
    RunStatus.CANCELLED: "cancelled",
    RunStatus.REJECTED: "rejected",
}
# Kinds an agent says (the bubble carries the agent's name).
_AGENTS = {"question", "milestone", "post", "notify"}
# Kinds the thread's file list replaces.
_FILE_LISTS = {"files"}


def status_words(status: RunStatus) -> str:
    return STATUS_WORDS.get(status, status.value.replace("_", " "))


@dataclass
class Bubble:
    """One message as shown: ``m`` the stored message (its text and payload)."""

    m: ChatMessage
    who: str
    side: Side
    at: float
    text: str
    # A question still waiting for an answer.
    open: bool = False

    @property
    def kind(self) -> str:
        return self.m.kind

    @property
    def payload(self) -> dict[str, Any]:
        return self.m.payload


@dataclass
class Thread:
    bubbles: list[Bubble] = field(default_factory=list)
    files: list[FileInfo] = field(default_factory=list)
    status: str = ""
    # A question waits for your answer.
    asking: bool = False


def _who(m: ChatMessage) -> tuple[str, Side]:
    if m.kind == "you":
        return YOU, "you"
    if m.kind in _AGENTS and m.payload.get("agent"):
        return str(m.payload["agent"]), "agent"
    return CARAMBA, "caramba"


def _stale(m: ChatMessage, run: RunState) -> bool:
    """A line that no longer holds."""
    if m.kind == "note" and m.payload.get("while") == "proposed":
        return run.status is not RunStatus.PROPOSED
    return m.kind in _FILE_LISTS


def thread_view(
    run: RunState, messages: list[ChatMessage], files: list[FileInfo], asker: str = YOU
) -> Thread:
    """The thread of ``run`` as a person reads it; ``asker``: who asked for it, by name
    (you, when the web chat did)."""
    ask = ChatMessage("ask", run.task, {"kind": "you"}, run.created_at)
    bubbles = [Bubble(ask, asker, "you", run.created_at, run.task)]
    for m in messages:
        if _stale(m, run):
            continue
        who, side = _who(m)
        bubbles.append(Bubble(m, who, side, m.at, m.text))
    # Only the last question waits, and only until you say something after it; the
    # status line says so meanwhile (not "Starting the agents…").
    if run.status is RunStatus.WAITING_HUMAN and not run.paused:
        asked = next((b for b in reversed(bubbles) if b.kind in ("you", "question")), None)
        if asked is not None and asked.kind == "question":
            asked.open = True
            for b in bubbles:
                if b.kind == "status" and b.payload.get("phase") != "ended":
                    b.text = f"Waiting for your answer to {asked.who}'s question."
    asking = any(b.open for b in bubbles)
    return Thread(bubbles, sorted(files, key=lambda f: f.path), status_words(run.status), asking)


def _hm(at: float) -> str:
    return time.strftime("%H:%M", time.gmtime(at))


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _size(n: int) -> str:
    if n < 1024:
        return f"{figures.number(n)} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


# What the chat's templates call: Markdown, figures (one formatter for every surface),
# times (UTC; chat.js shows them in the reader's own time) and file sizes.
HELPERS: dict[str, Any] = {
    "md": markdown,
    "fig": figures,
    "hm": _hm,
    "iso": _iso,
    "size": _size,
    # A schedule's next firing in its time zone ("Mon 1 Dec 09:00 (UTC)").
    "next_shown": when_shown,
}
