"""What the inspector shows of a run, read from Redis: the run record, its agents (spec,
state and thread), its events stream and its workspace. Plain data for the templates,
which escape every string (people's and agents' words included)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bots.web.timeline import Line, timeline_line
from core.state.listing import run_agents
from core.state.people import PeopleMarks
from core.state.store import Store
from core.types.agent import AgentState
from core.types.chat import Usage
from core.types.events import (
    BudgetReached,
    LLMCalled,
    QuestionAsked,
    QuestionClosed,
    RunEvent,
    ToolCalled,
)
from core.types.run import RunState
from core.workspace import FileInfo, Workspace

# Events read for one page at most (the stream itself is capped at redis.events_maxlen).
MAX_EVENTS = 20_000


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
    # Agent or person id → name, for who took a step ("by agt_…", "asked by U0ALICE").
    names: dict[str, str] = field(default_factory=dict)

    @property
    def cost_usd(self) -> float:
        planning = self.run.planning.cost_usd if self.run.planning else 0.0
        return self.usage.cost_usd + planning


def age(at: float, now: float | None = None) -> str:
    """``3 min``: how long ago, as people read it."""
    s = max(0, int((now or time.time()) - at))
    for unit, size in (("d", 86_400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit}"
    return f"{s} s"


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


async def load_agents(store: Store, run_id: str) -> list[AgentState]:
    """Every agent of the run, in one round trip."""
    return await run_agents(store, run_id)


async def run_page(store: Store, workspace: Workspace, run_id: str, default_model: str) -> RunPage:
    """Everything the run's page shows; ``RunError`` for an unknown run."""
    run = await store.get_run(run_id)
    usage = await store.run_usage(run_id)
    states = await load_agents(store, run_id)
    events = await read_all_events(store, run_id)
    files = await workspace.files(run_id)
    names = {**await _people(store, run, events), **{s.spec.id: s.spec.name for s in states}}
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
            by = names.get(event.by or "", event.by)
            q.answer, q.by, q.timed_out = event.answer, by, event.timed_out
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
        names=names,
    )


async def _people(
    store: Store, run: RunState, events: list[tuple[str, RunEvent]]
) -> dict[str, str]:
    """The names of the people who asked, decided and answered (those the people room
    knows): the page shows them, not their ids."""
    ids = [run.requested_by, *(t.by for t in run.history)]
    ids += [e.by for _i, e in events if isinstance(e, QuestionClosed) and e.by]
    return await PeopleMarks(store).names(ids)


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
