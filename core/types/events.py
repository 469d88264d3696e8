"""Progress of a run, for chat and for the inspector: one union discriminated by ``kind``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from core.types._base import Frozen, now
from core.types.agent import EndReason
from core.types.approvals import ApprovalDecision, ApprovalRequest
from core.types.forms import FormField
from core.types.run import RunStatus


class _EventBase(Frozen):
    run_id: str
    agent_id: str | None = None
    at: float = Field(default_factory=now)


class RunStarted(_EventBase):
    kind: Literal["run_started"] = "run_started"
    task: str


class AgentCreated(_EventBase):
    kind: Literal["agent_created"] = "agent_created"
    name: str
    role: str
    parent_id: str | None = None
    model: str
    tools: tuple[str, ...] = ()


class TurnStarted(_EventBase):
    kind: Literal["turn_started"] = "turn_started"
    seq: int


class LLMCalled(_EventBase):
    kind: Literal["llm_called"] = "llm_called"
    seq: int
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    # Running totals for the agent after this call.
    agent_tokens: int
    agent_cost_usd: float
    text: str | None = None
    # When the call was made and how long the model took, in seconds (None on events
    # stored before they were recorded; then ``at`` is about when it answered).
    started_at: float | None = None
    duration_s: float | None = None


class ToolCalled(_EventBase):
    kind: Literal["tool_called"] = "tool_called"
    seq: int
    tool: str
    arguments: str
    ok: bool
    result: str
    # When the tool started and how long it ran, in seconds (None on events stored
    # before they were recorded; then ``at`` is about when the turn's tools were done).
    started_at: float | None = None
    duration_s: float | None = None


class ToolProgress(_EventBase):
    """A tool call still at work reported how far it got (an MCP progress notification);
    shown in the run's status line, not kept as a milestone."""

    kind: Literal["tool_progress"] = "tool_progress"
    tool: str
    progress: float
    total: float | None = None
    message: str = ""


class MessageSent(_EventBase):
    kind: Literal["message_sent"] = "message_sent"
    message_id: str
    recipient: str
    preview: str


class AgentFinished(_EventBase):
    kind: Literal["agent_finished"] = "agent_finished"
    reason: EndReason
    result: str | None = None
    detail: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    # Its own spending plus what its finished descendants reported up.
    subtree_tokens: int = 0
    subtree_cost_usd: float = 0.0


class RunFinished(_EventBase):
    kind: Literal["run_finished"] = "run_finished"
    status: RunStatus
    result: str | None = None
    error: str | None = None
    tokens: int = 0
    cost_usd: float = 0.0


class ErrorRaised(_EventBase):
    kind: Literal["error"] = "error"
    message: str
    hint: str = ""


class ChatPosted(_EventBase):
    """An agent's post for the chat (a post_to_chat intent, processed once)."""

    kind: Literal["chat_posted"] = "chat_posted"
    text: str
    filename: str | None = None
    key: str = ""


class Notified(_EventBase):
    """An agent asked to notify someone (a notify intent, processed once)."""

    kind: Literal["notified"] = "notified"
    who: str
    text: str
    key: str = ""


class QuestionAsked(_EventBase):
    """An agent waits for a person's answer (``answer_question`` resumes it)."""

    kind: Literal["question_asked"] = "question_asked"
    question_id: str
    question: str
    timeout_s: float


class QuestionClosed(_EventBase):
    kind: Literal["question_closed"] = "question_closed"
    question_id: str
    answer: str | None = None
    by: str | None = None
    timed_out: bool = False


class FormAsked(_EventBase):
    """An MCP server asks the run's people to fill in a form (``fields``) or to open a
    link (``url``) while agent ``agent_id``'s tool call waits (``core.tools.elicit``)."""

    kind: Literal["form_asked"] = "form_asked"
    form_id: str
    server: str
    message: str
    fields: tuple[FormField, ...] = ()
    url: str | None = None
    timeout_s: float


class FormClosed(_EventBase):
    """The form was answered (``action``: accept, decline, cancel; ``by``: who) or
    given up at its time-out."""

    kind: Literal["form_closed"] = "form_closed"
    form_id: str
    action: Literal["accept", "decline", "cancel"]
    by: str | None = None
    timed_out: bool = False


class ApprovalAsked(_EventBase):
    """An agent's tool call waits for a person's approval (``core.runs.people.
    approve_action`` decides it); the request says what approvers are shown."""

    kind: Literal["approval_asked"] = "approval_asked"
    request: ApprovalRequest


class ApprovalDecided(_EventBase):
    """A person decided about a waiting tool call (or nobody did in time)."""

    kind: Literal["approval_decided"] = "approval_decided"
    approval_id: str
    tool: str
    decision: ApprovalDecision


class BudgetReached(_EventBase):
    """The run hit its budget or deadline and is paused: extend it or stop it."""

    kind: Literal["budget_reached"] = "budget_reached"
    what: Literal["tokens", "cost", "wall_clock"]
    detail: str
    tokens: int
    cost_usd: float
    # What an extension adds by default (config: [humans]).
    extend_tokens: int
    extend_cost_usd: float
    extend_wall_clock_s: float


class RunStatusChanged(_EventBase):
    """A run moved between running and waiting_human (paused, resumed), or its planning
    ended with a proposal to decide on (``proposed``)."""

    kind: Literal["run_status"] = "run_status"
    status: RunStatus
    by: str
    note: str = ""


class SpendApprovalAsked(_EventBase):
    """The request would take its channel's (or workspace's) month over its budget: it
    waits, before planning, for the budget's owner (or an admin) to approve or deny
    (``core.runs.spend.approve_spend``)."""

    kind: Literal["spend_asked"] = "spend_asked"
    place_name: str
    scope: Literal["channel", "workspace"] = "channel"
    month: str
    spent_usd: float
    month_usd: float
    owner_id: str = ""
    owner_name: str = ""


class SpendApprovalDecided(_EventBase):
    """The owner (or an admin, ``by``/``by_name``) approved or denied the request."""

    kind: Literal["spend_decided"] = "spend_decided"
    approved: bool
    by: str
    by_name: str = ""


class SpendWarned(_EventBase):
    """The channel's (or workspace's) month reached ``warn_at`` of its budget (said once
    per place and month, in the thread of the request that found it)."""

    kind: Literal["spend_warned"] = "spend_warned"
    place_name: str
    scope: Literal["channel", "workspace"] = "channel"
    month: str
    spent_usd: float
    month_usd: float


RunEvent = Annotated[
    RunStarted
    | AgentCreated
    | TurnStarted
    | LLMCalled
    | ToolCalled
    | ToolProgress
    | MessageSent
    | AgentFinished
    | RunFinished
    | ErrorRaised
    | ChatPosted
    | Notified
    | QuestionAsked
    | QuestionClosed
    | FormAsked
    | FormClosed
    | ApprovalAsked
    | ApprovalDecided
    | BudgetReached
    | RunStatusChanged
    | SpendApprovalAsked
    | SpendApprovalDecided
    | SpendWarned,
    Field(discriminator="kind"),
]
RUN_EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)
