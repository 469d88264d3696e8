"""What the inspector shows of a run, read from Redis: the run record, its agents (spec,
state and thread), its events stream and its workspace. Plain data for the templates,
which escape every string (people's and agents' words included)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from bots.web.shown import Shown
from bots.web.timeline import Line, timeline_line
from bots.web.timing import Timings, timings
from bots.web.turns import TurnView, turns
from bots.web.waterfall import Waterfall, waterfall
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
    # Time spent in its turns, how many it took, its depth in the tree.
    busy_s: float = 0.0
    turn_count: int = 0
    depth: int = 0


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
    timings: Timings = field(default_factory=Timings)
    waterfall: Waterfall | None = None
    # What the page narrows to, and how many timeline rows there are in all.
    shown: Shown = field(default_factory=Shown)
    timeline_total: int = 0

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


async def run_page(
    store: Store,
    workspace: Workspace,
    run_id: str,
    default_model: str,
    query: Mapping[str, str] | None = None,
) -> RunPage:
    """Everything the run's page shows, narrowed as ``query`` (the page's query string:
    ``agent``, ``kind``) says; ``RunError`` for an unknown run."""
    run = await store.get_run(run_id)
    usage = await store.run_usage(run_id)
    states = await load_agents(store, run_id)
    events = await read_all_events(store, run_id)
    files = await workspace.files(run_id)
    names = {**await _people(store, run, events), **{s.spec.id: s.spec.name for s in states}}
    teams = {t.id: t.name or t.id for t in (run.cohort.teams if run.cohort else ())}
    timed = timings((e for _i, e in events), time.time())
    ordered = sorted(states, key=lambda s: s.created_at)
    agents = [_agent(s, events, default_model, timed) for s in ordered]
    roots = _tree(agents)
    shown = Shown.of(query or {}, {a.id: a.name for a in agents})
    lanes = [(a.id, a.name, a.depth) for a in _walk(roots) if shown.keeps_agent(a.id)]
    lines = [line for i, e in events if (line := timeline_line(i, e, names, teams))]
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
        timeline=[line for line in lines if shown.keeps(line.kind, line.agents)],
        questions=list(questions.values()),
        pauses=[e for _i, e in events if isinstance(e, BudgetReached)],
        files=files,
        last_event=events[-1][0] if events else "0-0",
        names=names,
        timings=timed,
        waterfall=waterfall(timed, lanes),
        shown=shown,
        timeline_total=len(lines),
    )


async def _people(
    store: Store, run: RunState, events: list[tuple[str, RunEvent]]
) -> dict[str, str]:
    """The names of the people who asked, decided and answered (those the people room
    knows): the page shows them, not their ids."""
    ids = [run.requested_by, *(t.by for t in run.history)]
    ids += [e.by for _i, e in events if isinstance(e, QuestionClosed) and e.by]
    return await PeopleMarks(store).names(ids)


def _agent(
    state: AgentState, events: list[tuple[str, RunEvent]], default_model: str, timed: Timings
) -> AgentView:
    spec = state.spec
    calls = [e for _i, e in events if isinstance(e, LLMCalled) and e.agent_id == spec.id]
    tools = [e for _i, e in events if isinstance(e, ToolCalled) and e.agent_id == spec.id]
    done = turns(state, calls, tools, timed)
    spent = timed.of(spec.id, "turn")
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
        turns=done,
        busy_s=sum(s.seconds for s in spent),
        turn_count=len(spent),
    )


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
    for a in _walk(roots):
        for child in a.children:
            child.depth = a.depth + 1
    return roots


def _walk(roots: list[AgentView]) -> Iterator[AgentView]:
    """The tree depth first, parents before their children."""
    for a in roots:
        yield a
        yield from _walk(a.children)
