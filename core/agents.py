"""Building a new agent: its system prompt (from its role's template) and first thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lifecycle import limits_for
from core.types.agent import AgentSpec, AgentState, AgentStatus
from core.types.chat import ChatMessage
from core.types.events import AgentCreated

if TYPE_CHECKING:
    from core.runtime import Services

ROLE_TITLES = {
    "orchestrator": "the orchestrator",
    "lead": "a team lead",
    "member": "a team member",
    "judge": "the judge",
    "ui": "the chat assistant",
    "solo": "an assistant",
}


def system_prompt(
    svc: Services, spec: AgentSpec, *, task: str, requester: str, playbook: str = ""
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
    svc: Services,
    run_id: str,
    spec: AgentSpec,
    *,
    task: str,
    requester: str,
    brief: str,
    depth: int = 0,
    playbook: str = "",
) -> AgentState:
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


def created_event(svc: Services, state: AgentState) -> AgentCreated:
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
