"""The Edit form: a modal with each agent's prompt, tools, model and token budget, and
its submission translated into a ``core.runs.approval.Edit`` (core re-validates it)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError
from slack_sdk.models.blocks import (
    Block,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    NumberInputElement,
    Option,
    PlainTextInputElement,
    StaticMultiSelectElement,
)
from slack_sdk.models.views import View

from bots.slack.text import escape
from core.runs.edits import AgentEdit, Edit, EditField, EditProblem, invalid_fields
from core.types.agent import AgentSpec

EDIT_VIEW = "caramba_edit"
_PER_AGENT = 4
_MAX_BLOCKS = 100
_TEXT_LIMIT = 3000


def edit_view(agents: list[AgentSpec], tools: list[str], meta: dict[str, str]) -> View:
    """The modal for ``agents``; ``meta`` (run id, card location) travels with it."""
    room = (_MAX_BLOCKS - 1) // _PER_AGENT
    blocks: list[Block] = []
    options = [Option(text=t, value=t) for t in tools[:100]]
    for a in agents[:room]:
        chosen = [o for o in options if o.value in a.tools]
        blocks += [
            InputBlock(
                block_id=f"prompt:{a.id}",
                label=f"{a.name[:120]} — instructions",
                element=PlainTextInputElement(
                    action_id="v",
                    multiline=True,
                    max_length=_TEXT_LIMIT,
                    initial_value=(a.system_prompt or a.description)[:_TEXT_LIMIT] or None,
                ),
                optional=True,
            ),
            InputBlock(
                block_id=f"tools:{a.id}",
                label=f"{a.name[:120]} — tools",
                element=StaticMultiSelectElement(
                    action_id="v", options=options, initial_options=chosen or None
                ),
                optional=True,
            ),
            InputBlock(
                block_id=f"model:{a.id}",
                label=f"{a.name[:120]} — model (empty: the role's default)",
                element=PlainTextInputElement(action_id="v", initial_value=a.model or None),
                optional=True,
            ),
            InputBlock(
                block_id=f"tokens:{a.id}",
                label=f"{a.name[:120]} — token budget",
                element=NumberInputElement(
                    action_id="v",
                    is_decimal_allowed=False,
                    min_value="1000",
                    initial_value=str(a.budget.max_tokens) if a.budget.max_tokens else None,
                ),
                optional=True,
            ),
        ]
    if len(agents) > room:
        note = f"{len(agents) - room} more agents are not shown; edit them with `caramba run`."
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=escape(note))]))
    return View(
        type="modal",
        callback_id=EDIT_VIEW,
        title="Edit the proposal",
        submit="Save",
        close="Cancel",
        private_metadata=json.dumps(meta),
        blocks=blocks,
    )


def _value(values: dict[str, Any], block_id: str) -> dict[str, Any]:
    return values.get(block_id, {}).get("v", {})


def edit_from_values(agents: list[AgentSpec], values: dict[str, Any]) -> Edit:
    """The changes a submitted form makes (unchanged fields are left out). A value the
    form cannot take raises :class:`FormProblems`, each under its own field."""
    changes: list[AgentEdit] = []
    problems: list[EditProblem] = []
    for a in agents:
        if f"prompt:{a.id}" not in values:
            continue  # not shown in the form
        prompt = _value(values, f"prompt:{a.id}").get("value") or ""
        tools = tuple(
            o["value"] for o in _value(values, f"tools:{a.id}").get("selected_options") or ()
        )
        model = _value(values, f"model:{a.id}").get("value") or ""
        tokens = _value(values, f"tokens:{a.id}").get("value")
        try:
            change = AgentEdit(
                agent_id=a.id,
                system_prompt=prompt
                if prompt and prompt != (a.system_prompt or a.description)
                else None,
                tools=tools if set(tools) != set(a.tools) else None,
                model=model if model != (a.model or "") else None,
                max_tokens=int(tokens) if tokens and int(tokens) != a.budget.max_tokens else None,
            )
        except ValidationError as exc:
            for field, message in invalid_fields(exc):
                problems.append(
                    EditProblem(
                        agent_id=a.id, agent_name=a.name, field=field or "prompt", message=message
                    )
                )
            continue
        if change.model_dump(exclude={"agent_id"}, exclude_defaults=True):
            changes.append(change)
    if problems:
        raise FormProblems(problems)
    return Edit(agents=tuple(changes))


# The form's fields (block ids ``<field>:<agent id>``); no cost budget here.
_FORM_FIELDS: tuple[EditField, ...] = ("prompt", "tools", "model", "tokens")


class FormProblems(Exception):
    def __init__(self, problems: list[EditProblem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


def form_errors(agents: list[AgentSpec], problems: Iterable[EditProblem]) -> dict[str, str]:
    """Slack's ``response_action="errors"`` map: each problem under its agent's field
    (a field the form does not have: under that agent's instructions)."""
    shown = {a.id for a in agents}
    errors: dict[str, str] = {}
    for p in problems:
        agent = p.agent_id if p.agent_id in shown else agents[0].id
        field = p.field if p.field in _FORM_FIELDS else "prompt"
        block = f"{field}:{agent}"
        errors[block] = (f"{errors[block]}; " if block in errors else "") + p.message
    return {k: v[:300] for k, v in errors.items()}
