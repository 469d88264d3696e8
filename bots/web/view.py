"""What the inspector shows of a run, read from Redis: the run record, its agents (spec,
state and thread), its events stream and its workspace. Plain data for the templates,
which escape every string (people's and agents' words included)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, assert_never

from core.state.store import Store
from core.types.agent import AgentState, EndReason
from core.types.chat import Usage
from core.types.events import (
    AgentCreated,
    AgentFinished,
    BudgetReached,
    ChatPosted,
    ErrorRaised,
    LLMCalled,
    MessageSent,
    Notified,
    QuestionAsked,
    QuestionClosed,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatusChanged,
    ToolCalled,
    TurnStarted,
)
from core.types.run import RunState, RunStatus
from core.workspace import FileInfo, Workspace

# Events read for one page at most (the stream itself is capped at redis.events_maxlen).
MAX_EVENTS = 20_000
PREVIEW_CHARS = 240


@dataclass
class ToolCallView:
    id: str
    name: str
    arguments: str
    result: str | None = None
    ok: bool | None = None


@dataclass
class TurnView:
    number: int
    text: str | None
    calls: list[ToolCallView]
    # What reached the agent before this call: messages, answers, notes.
    received: list[str]
    model: str = ""
    tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class AgentView:
    id: str
    name: str
    role: str
    model: str
    status: str
    end_reason: str | None
    end_detail: str
    parent_id: str | None
    prompt: str
    tools: tuple[str, ...]
    result: str | None
    tokens: int
    cost_usd: float
    turns: list[TurnView]
    children: list[AgentView] = field(default_factory=list)
    subtree_tokens: int = 0
    subtree_cost_usd: float = 0.0


@dataclass
class Line:
    """One row of the timeline."""

    id: str
    at: float
    kind: str
    who: str
    text: str
    # "private" | "team" | "broadcast" for messages; "ok" | "error" | "" otherwise.
    tag: str = ""
    target: str = ""
    detail: str = ""


@dataclass
class Question:
    id: str
    agent: str
    question: str
    asked_at: float
    answer: str | None = None
    by: str | None = None
    timed_out: bool = False


@dataclass
class RunPage:
    run: RunState
    usage: Usage
    agents: list[AgentView]
    roots: list[AgentView]
    timeline: list[Line]
    questions: list[Question]
    pauses: list[BudgetReached]
    files: list[FileInfo]
    # The stream id of the last event read: live updates start after it.
    last_event: str

    @property
    def cost_usd(self) -> float:
        planning = self.run.planning.cost_usd if self.run.planning else 0.0
        return self.usage.cost_usd + planning


@dataclass
class RunRow:
    id: str
    task: str
    status: str
    requested_by: str
    channel: str
    created_at: float
    tokens: int
    cost_usd: float


def short(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def age(at: float, now: float | None = None) -> str:
    """``3 min``: how long ago, as people read it."""
    s = max(0, int((now or time.time()) - at))
    for unit, size in (("d", 86_400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit}"
    return f"{s} s"


async def list_runs(store: Store, limit: int, platforms: tuple[str, ...]) -> list[RunRow]:
    """The newest ``limit`` runs, newest first."""
    ids: Any = await store.redis.zrevrange(store.keys.runs_index(), 0, limit - 1)
    if not ids:
        return []
    async with store.redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.get(store.keys.run(run_id))
            pipe.hgetall(store.keys.run_usage(run_id))
            for platform in platforms:
                pipe.hget(f"{store.keys.prefix}:{platform}:relays", run_id)
        replies: list[Any] = await pipe.execute()
    step = 2 + len(platforms)
    rows = []
    for i in range(len(ids)):
        raw, usage_raw, *shown = replies[i * step : (i + 1) * step]
        if raw is None:
            continue
        run = RunState.model_validate_json(raw)
        usage = _usage(usage_raw)
        planning = run.planning or Usage()
        rows.append(
            RunRow(
                id=run.id,
                task=run.task,
                status=run.status.value,
                requested_by=run.requested_by,
                channel=_channel(platforms, shown),
                created_at=run.created_at,
                tokens=usage.total_tokens + planning.total_tokens,
                cost_usd=usage.cost_usd + planning.cost_usd,
            )
        )
    return rows


def _channel(platforms: tuple[str, ...], shown: list[Any]) -> str:
    """Where a chat adapter shows the run (while it relays it), as ``slack #C123``."""
    import json

    for platform, raw in zip(platforms, shown, strict=True):
        if raw:
            try:
                return f"{platform} {json.loads(raw).get('channel', '')}".strip()
            except ValueError:
                continue
    return ""


def _usage(raw: dict[str, str]) -> Usage:
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens", 0) or 0),
        completion_tokens=int(raw.get("completion_tokens", 0) or 0),
        cost_usd=float(raw.get("cost_usd", 0) or 0),
    )


async def read_all_events(store: Store, run_id: str) -> list[tuple[str, RunEvent]]:
    out: list[tuple[str, RunEvent]] = []
    last = "0-0"
    while len(out) < MAX_EVENTS:
        batch = await store.read_events(run_id, after=last, count=1000)
        if not batch:
            break
        out.extend(batch)
        last = batch[-1][0]
    return out


async def run_page(store: Store, workspace: Workspace, run_id: str, default_model: str) -> RunPage:
    """Everything the run's page shows; ``RunError`` for an unknown run."""
    run = await store.get_run(run_id)
    usage = await store.run_usage(run_id)
    states = [
        s
        for s in [await store.load_agent(run_id, a) for a in await store.agent_ids(run_id)]
        if s is not None
    ]
    events = await read_all_events(store, run_id)
    files = await workspace.files(run_id)
    names = {s.spec.id: s.spec.name for s in states}
    teams = {t.id: t.name or t.id for t in (run.cohort.teams if run.cohort else ())}
    agents = [_agent(s, events, default_model) for s in sorted(states, key=lambda s: s.created_at)]
    roots = _tree(agents)
    questions: dict[str, Question] = {}
    for _id, event in events:
        if isinstance(event, QuestionAsked):
            questions[event.question_id] = Question(
                event.question_id, names.get(event.agent_id or "", ""), event.question, event.at
            )
        elif isinstance(event, QuestionClosed) and event.question_id in questions:
            q = questions[event.question_id]
            q.answer, q.by, q.timed_out = event.answer, event.by, event.timed_out
    return RunPage(
        run=run,
        usage=usage,
        agents=agents,
        roots=roots,
        timeline=[line for i, e in events if (line := timeline_line(i, e, names, teams))],
        questions=list(questions.values()),
        pauses=[e for _i, e in events if isinstance(e, BudgetReached)],
        files=files,
        last_event=events[-1][0] if events else "0-0",
    )


def _agent(state: AgentState, events: list[tuple[str, RunEvent]], default_model: str) -> AgentView:
    spec = state.spec
    calls = [e for _i, e in events if isinstance(e, LLMCalled) and e.agent_id == spec.id]
    tools = [e for _i, e in events if isinstance(e, ToolCalled) and e.agent_id == spec.id]
    turns = _turns(state, calls, tools)
    model = spec.model or (calls[-1].model if calls else default_model)
    return AgentView(
        id=spec.id,
        name=spec.name,
        role=spec.role,
        model=model,
        status=state.status.value,
        end_reason=state.end_reason.value if state.end_reason else None,
        end_detail=state.end_detail,
        parent_id=spec.parent_id,
        prompt=spec.system_prompt,
        tools=spec.tools,
        result=state.result,
        tokens=state.usage.total_tokens,
        cost_usd=state.usage.cost_usd,
        turns=turns,
    )


def _turns(state: AgentState, calls: list[LLMCalled], tools: list[ToolCalled]) -> list[TurnView]:
    """The agent's thread as turns: what it received, what it said, the tools it called
    and what they returned. The n-th answer in the thread is the n-th model call."""
    turns: list[TurnView] = []
    received: list[str] = []
    by_call: dict[str, ToolCallView] = {}
    for message in state.thread:
        if message.role == "system":
            continue
        if message.role == "user":
            received.append(message.content or "")
        elif message.role == "assistant":
            views = [ToolCallView(c.id, c.name, c.arguments) for c in message.tool_calls]
            by_call.update({v.id: v for v in views})
            turn = TurnView(len(turns) + 1, message.content, views, received)
            if len(turns) < len(calls):
                made = calls[len(turns)]
                turn.model = made.model
                turn.tokens = made.prompt_tokens + made.completion_tokens
                turn.cost_usd = made.cost_usd
            turns.append(turn)
            received = []
        elif message.role == "tool" and message.tool_call_id in by_call:
            by_call[message.tool_call_id].result = message.content
    flat = [c for t in turns for c in t.calls]
    for view, event in zip(flat, tools, strict=False):
        if event.tool == view.name:
            view.ok = event.ok
    if received and turns:
        # Arrived after its last answer (a result it never read: it had finished).
        turns.append(TurnView(len(turns) + 1, None, [], received))
    return turns


def _tree(agents: list[AgentView]) -> list[AgentView]:
    """Link children to parents and roll tokens and cost up the tree."""
    by_id = {a.id: a for a in agents}
    roots: list[AgentView] = []
    for a in agents:
        parent = by_id.get(a.parent_id or "")
        (parent.children if parent is not None else roots).append(a)

    def roll(a: AgentView) -> tuple[int, float]:
        tokens, cost = a.tokens, a.cost_usd
        for child in a.children:
            t, c = roll(child)
            tokens, cost = tokens + t, cost + c
        a.subtree_tokens, a.subtree_cost_usd = tokens, cost
        return tokens, cost

    for root in roots:
        roll(root)
    return roots


def audience(recipient: str) -> str:
    if recipient.startswith("team:"):
        return "team"
    if recipient == "all" or recipient.startswith("all:"):
        return "broadcast"
    return "private"


def timeline_line(
    entry_id: str, event: RunEvent, names: dict[str, str], teams: dict[str, str]
) -> Line | None:
    """One timeline row for an event, or None for events the timeline leaves out (each
    model call and tool call is shown with its agent's turns instead)."""
    who = names.get(event.agent_id or "", event.agent_id or "")

    def line(
        text: str, *, tag: str = "", target: str = "", detail: str = "", by: str | None = None
    ) -> Line:
        return Line(entry_id, event.at, event.kind, by or who, text, tag, target, detail)

    match event:
        case MessageSent():
            tag = audience(event.recipient)
            if tag == "team":
                team = event.recipient.removeprefix("team:")
                target = f"team {teams.get(team, team)}"
            elif tag == "broadcast":
                target = "everyone"
            else:
                target = names.get(event.recipient, event.recipient)
            return line(event.preview, tag=tag, target=target)
        case RunStarted():
            return line("the run started")
        case AgentCreated():
            return line(f"created as {event.role} ({event.model})", by=event.name)
        case AgentFinished():
            tag = "ok" if event.reason is EndReason.FINISHED else "error"
            return line(
                f"ended: {event.reason.value}", tag=tag, detail=short(event.result or event.detail)
            )
        case RunFinished():
            tag = "ok" if event.status is RunStatus.COMPLETED else "error"
            return line(
                f"the run {event.status.value}", tag=tag, detail=short(event.result or event.error)
            )
        case ErrorRaised():
            return line(event.message, tag="error", detail=event.hint)
        case ChatPosted():
            return line(f"posted to the chat: {event.text}", detail=event.filename or "")
        case Notified():
            return line(f"notified {event.who}: {event.text}")
        case QuestionAsked():
            return line(f"asked: {event.question}", tag="question")
        case QuestionClosed():
            text = "the question timed out" if event.timed_out else f"{event.by} answered"
            return line(text, detail=event.answer or "", tag="question")
        case BudgetReached():
            return line(f"paused at its {event.what} budget", tag="error", detail=event.detail)
        case RunStatusChanged():
            return line(f"the run is {event.status.value}", by=event.by, detail=event.note)
        case TurnStarted() | LLMCalled() | ToolCalled():
            return None
        case _:
            assert_never(event)
