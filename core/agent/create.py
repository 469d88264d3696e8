"""Creating agents: a new agent's system prompt (its role's template) and first thread,
and a designed cohort's whole tree at the start of a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from core.agent.limits import limits_for
from core.config import Settings
from core.errors import RunError
from core.prompts import PromptLibrary
from core.scheduler.base import TurnJob
from core.services import Services
from core.state import agents
from core.types.agent import AgentSpec, AgentState, AgentStatus
from core.types.chat import ChatMessage
from core.types.cohort import Cohort
from core.types.events import AgentCreated
from core.types.files import AttachedFile

if TYPE_CHECKING:
    from core.tools.registry import ToolRegistry


class Parts(Protocol):
    """What building an agent needs: ``Services``, or a tool's ``ToolContext``."""

    @property
    def settings(self) -> Settings: ...

    @property
    def prompts(self) -> PromptLibrary: ...

    @property
    def tools(self) -> ToolRegistry: ...


JUDGE = "judge"
ROLE_TITLES = {
    "orchestrator": "the orchestrator",
    "lead": "a team lead",
    "member": "a team member",
    "judge": "the judge",
    "ui": "the chat assistant",
    "solo": "an assistant",
}


def system_prompt(
    svc: Parts, spec: AgentSpec, *, task: str, requester: str, playbook: str = ""
) -> str:
    """The role's template (config: [prompts.roles]) + the spec's own prompt + playbook."""
    limits = limits_for(svc.settings, AgentState(spec=spec, run_id=""))
    body = svc.prompts.render(
        svc.settings.prompts.template_for(spec.role),
        agent={
            "name": spec.name,
            "role": spec.role,
            "description": spec.description,
            "role_title": ROLE_TITLES.get(spec.role, f"a {spec.role}"),
        },
        task=task,
        requester=requester,
        tool_docs=[
            {"name": t.name, "description": t.description} for t in svc.tools.subset(spec.tools)
        ],
        limits={"turns": limits.max_turns, "tokens": limits.max_tokens},
    )
    return "\n\n".join(part for part in (body, spec.system_prompt, playbook) if part)


def new_agent_state(
    svc: Parts,
    run_id: str,
    spec: AgentSpec,
    *,
    task: str,
    requester: str,
    brief: str,
    depth: int = 0,
    playbook: str = "",
    files: Sequence[AttachedFile] = (),
) -> AgentState:
    """A new agent, ready for its first turn; its first message is ``brief`` and the
    list of ``files`` attached in the chat, if any."""
    if files:
        attached = svc.prompts.render("bus/attached.j2", attached=[f.describe() for f in files])
        brief = f"{brief}\n\n{attached}"
    return AgentState(
        spec=spec,
        run_id=run_id,
        status=AgentStatus.READY,
        depth=depth,
        thread=[
            ChatMessage(
                role="system",
                content=system_prompt(svc, spec, task=task, requester=requester, playbook=playbook),
            ),
            ChatMessage(role="user", content=brief),
        ],
    )


def created_event(svc: Parts, state: AgentState) -> AgentCreated:
    spec = state.spec
    return AgentCreated(
        run_id=state.run_id,
        agent_id=spec.id,
        name=spec.name,
        role=spec.role,
        parent_id=spec.parent_id,
        model=spec.model or svc.settings.llm.model_for(spec.role),
        tools=spec.tools,
    )


def _listed(spec: AgentSpec) -> dict[str, str]:
    """An agent as a playbook lists it."""
    return {"name": spec.name, "id": spec.id, "description": spec.description}


def require_known_tools(svc: Parts, spec: AgentSpec) -> None:
    """Refuse an agent that names tools the registry lacks, listing the ones it has."""
    unknown = svc.tools.unknown(spec.tools)
    if unknown:
        raise RunError(
            f"agent {spec.name} names unknown tools: {', '.join(unknown)} "
            f"(available: {', '.join(svc.tools.names())})"
        )


async def spawn_cohort(
    svc: Services,
    run_id: str,
    cohort: Cohort,
    task: str,
    requester: str,
    *,
    files: Sequence[AttachedFile] | None = None,
) -> list[AgentState]:
    """Create a designed cohort's whole tree (root first) and start every agent.

    Each agent gets its place in the tree (depth, children), its brief (the task for the
    root, its description from its parent for the others) and, for a team's lead, its
    team's playbook with the members already named (a judge apart from them). Every
    agent's first message lists the files attached to the request. The agents are created
    in one transaction: all of them, or none. ``files``: the run's, when the caller has
    the run at hand (else they are read from its record).
    """
    if files is None:
        files = (await svc.store.get_run(run_id)).files
    for spec in cohort.agents:
        require_known_tools(svc, spec)
    tree = _Tree.of(cohort)
    states = [
        _member(svc, run_id, cohort, tree, spec, task, requester, files) for spec in tree.order
    ]
    await agents.create_all(
        svc.store,
        run_id,
        [
            agents.NewAgent(s, [created_event(svc, s)], svc.bus.register_writes(run_id, s.spec))
            for s in states
        ],
    )
    for state in states:
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=state.spec.id, seq=0))
    return states


@dataclass(frozen=True)
class _Tree:
    """A cohort's agents by id, breadth first (a parent before its children), with their
    depths and children."""

    by_id: dict[str, AgentSpec]
    order: list[AgentSpec]
    depth: dict[str, int]
    children: dict[str, list[str]]

    @classmethod
    def of(cls, cohort: Cohort) -> _Tree:
        by_id = {a.id: a for a in cohort.agents}
        children: dict[str, list[str]] = {a.id: [] for a in cohort.agents}
        for a in cohort.agents:
            if a.parent_id in children:
                children[a.parent_id].append(a.id)
        root = cohort.root
        order, depth = [root], {root.id: 0}
        for spec in order:
            for child_id in children[spec.id]:
                depth[child_id] = depth[spec.id] + 1
                order.append(by_id[child_id])
        return cls(by_id, order, depth, children)


def _member(
    svc: Services,
    run_id: str,
    cohort: Cohort,
    tree: _Tree,
    spec: AgentSpec,
    task: str,
    requester: str,
    files: Sequence[AttachedFile],
) -> AgentState:
    """One agent of the cohort, in its place in the tree."""
    parent = tree.by_id.get(spec.parent_id or "")
    state = new_agent_state(
        svc,
        run_id,
        spec,
        task=task,
        requester=requester,
        brief=task if parent is None else f"Your brief from {parent.name}:\n{spec.description}",
        depth=tree.depth[spec.id],
        playbook=_team_playbook(svc, cohort, tree, spec),
        files=files,
    )
    state.children = list(tree.children[spec.id])
    return state


def _team_playbook(svc: Services, cohort: Cohort, tree: _Tree, spec: AgentSpec) -> str:
    """A lead's team playbook with its members named; empty for an agent leading none."""
    team = next((t for t in cohort.teams if t.lead_id == spec.id), None)
    if team is None:
        return ""
    members = [tree.by_id[c] for c in tree.children[spec.id]]
    return svc.prompts.render(
        f"patterns/{team.pattern}.md.j2",
        team_name=spec.name,
        # A judge under a lead judges its team's work; it is not one of the team.
        members=[_listed(m) for m in members if m.role != JUDGE],
        judges=[_listed(m) for m in members if m.role == JUDGE],
        brief=spec.description,
        max_rounds=svc.settings.agents.discussion_rounds,
    )
