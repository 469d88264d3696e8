"""The chat layer's intentions: what the relay wants shown in a run's thread, before any
platform's markup (a renderer, ``bots.chat.ports.Renderer``, turns each into messages).
Texts are as people or agents wrote them: the renderer escapes them. Import them from
``bots.chat.ports``, beside the ports they go through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bots.chat.tasks import AgentTask
from core.runs.approval import ProposalView
from core.types._base import Frozen
from core.types.forms import FormField
from core.types.run import RunStatus


class OutFile(Frozen):
    """A file of the run's workspace to upload into the thread."""

    path: str  # in the workspace, e.g. outputs/chart.png
    filename: str
    title: str
    size: int


@dataclass(frozen=True)
class StatusLine:
    """The run's status message, edited in place. ``phase``: ``starting`` (nothing yet),
    ``running`` (``who`` did ``doing``, with ``tool`` when it used one) or ``ended``
    (``outcome``: the run's final status, with its ``tokens`` and ``cost_usd``).
    ``running``: the run can still be cancelled (show Cancel). ``link``: the run's
    inspector page (``bots.chat.links.run_link``), "" when there is none. ``tasks``: one
    per agent, its state and last action (``bots.chat.tasks``)."""

    run_id: str
    phase: Literal["starting", "running", "ended"]
    agents: int = 0
    finished: int = 0
    tool_calls: int = 0
    who: str = ""
    doing: str = ""
    tool: str = ""
    outcome: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    running: bool = False
    link: str = ""
    tasks: tuple[AgentTask, ...] = ()
    kind: Literal["status"] = "status"


@dataclass(frozen=True)
class Card:
    """The proposal card (``core.runs.approval.view``) with Approve / Edit / Reject, and
    ``link``: the run's inspector page, "" when there is none."""

    view: ProposalView
    link: str = ""
    kind: Literal["card"] = "card"


@dataclass(frozen=True)
class Milestone:
    """Agent ``agent`` (its name) ended (``reason``: an ``EndReason`` value) with ``text``.
    Only agents that did work of their own get one (not those summing up agents under
    them), each text once."""

    agent: str
    reason: str
    text: str
    kind: Literal["milestone"] = "milestone"


@dataclass(frozen=True)
class Question:
    """Agent ``agent`` asks the people in the thread (a reply answers it)."""

    agent: str
    text: str
    kind: Literal["question"] = "question"


@dataclass(frozen=True)
class Note:
    """The bot's own line: ``info``, a ``warning`` (an agent's or the run's error) or an
    ``error`` (something of the bot's failed: the card, an upload)."""

    text: str
    level: Literal["info", "warning", "error"] = "info"
    kind: Literal["note"] = "note"


@dataclass(frozen=True)
class Notify:
    """Agent ``agent`` notifies ``who`` (a handle as the agent wrote it, e.g. "@ana")."""

    agent: str
    who: str
    text: str
    kind: Literal["notify"] = "notify"


@dataclass(frozen=True)
class ChatPost:
    """Agent ``agent`` posts ``text`` to the thread (``post_to_chat``). With ``filename``
    the relay uploads the text as a file of that name (its comment made with the
    renderer's ``bold`` and ``escape``), and this is rendered only if the file cannot be
    sent: then the text is posted, named."""

    agent: str
    text: str
    filename: str | None = None
    kind: Literal["chat_post"] = "chat_post"


@dataclass(frozen=True)
class Result:
    """The run's end in the thread: its result (``status`` completed) or why it did not
    complete. ``rateable``: the last message gets feedback buttons (a completed run only:
    a failure is never shown as a result to rate). ``file``: the whole text went up as
    this file; render a preview pointing at it. ``streamed``: render it as one message to
    stream (``bots.chat.streams``): its text, and the payload that ends the stream (the
    feedback buttons of a rateable run)."""

    run_id: str
    status: RunStatus
    text: str
    tokens: int = 0
    cost_usd: float = 0.0
    rateable: bool = False
    file: str | None = None
    streamed: bool = False
    kind: Literal["result"] = "result"


@dataclass(frozen=True)
class Artifacts:
    """The files the agents left under ``outputs/``, sent as one message: this renders
    its comment (may be empty)."""

    run_id: str
    files: tuple[OutFile, ...]
    kind: Literal["artifacts"] = "artifacts"


@dataclass(frozen=True)
class Paused:
    """The run reached its budget (``what``: tokens, cost or wall_clock) and waits for a
    person: Extend (adds the ``extend_*`` amounts, ``[humans]`` in config) or Stop (ends
    it with the results so far). ``tokens`` / ``cost_usd``: what it spent; ``limit_*``:
    its budget (0: unknown; ``detail`` says it in core's words). Words:
    ``bots.chat.pause``."""

    run_id: str
    what: Literal["tokens", "cost", "wall_clock"]
    detail: str
    tokens: int = 0
    cost_usd: float = 0.0
    limit_tokens: int = 0
    limit_cost_usd: float = 0.0
    extend_tokens: int = 0
    extend_cost_usd: float = 0.0
    extend_wall_clock_s: float = 0.0
    kind: Literal["paused"] = "paused"


@dataclass(frozen=True)
class Form:
    """MCP server ``server`` asks the run's people, during agent ``agent``'s tool call,
    to fill in ``fields`` (a form: Fill in / Decline) or to open ``url`` (Done /
    Decline); the call waits. Words: ``bots.chat.forms``."""

    run_id: str
    form_id: str
    agent: str
    server: str
    message: str
    fields: tuple[FormField, ...] = ()
    url: str | None = None
    kind: Literal["form"] = "form"


@dataclass(frozen=True)
class ToolApproval:
    """Agent ``agent`` asks to call ``tool`` (``purpose``: what it does, in plain words;
    ``risks``: what it may touch) with ``arguments`` (secrets masked) because of
    ``reason``; it waits for Approve once / Approve for this run / Deny. ``approval_id``
    names the request for the click. Words: ``bots.chat.approvals``."""

    run_id: str
    approval_id: str
    agent: str
    tool: str
    purpose: str
    arguments: str
    reason: str = ""
    risks: tuple[str, ...] = ()
    kind: Literal["tool_approval"] = "tool_approval"


@dataclass(frozen=True)
class SpendAsk:
    """The request would take ``place_name``'s month over its budget (``spent_usd`` of
    ``month_usd``); it waits, before planning, for the budget's owner (``owner_name``) or
    an admin: Approve / Deny. ``text``: the ask in core's plain words. Words:
    ``bots.chat.spend_asks``."""

    run_id: str
    text: str
    place_name: str
    owner_name: str = ""
    spent_usd: float = 0.0
    month_usd: float = 0.0
    kind: Literal["spend_ask"] = "spend_ask"


Intention = (
    StatusLine
    | Card
    | Milestone
    | Question
    | Note
    | Notify
    | ChatPost
    | Result
    | Artifacts
    | Paused
    | Form
    | ToolApproval
    | SpendAsk
)
