"""Editing one agent of a proposal: a modal (Discord allows five inputs) with its
instructions, tools, model, token and cost budgets, and its submission translated into a
``core.runs.edits.AgentEdit`` — core validates it (unknown tools or models, budgets) and
its problems are shown to the person who submitted, each naming its field."""

from __future__ import annotations

import re
from typing import Any, Protocol, cast

import discord
from pydantic import ValidationError

from bots.discord.text import truncate
from core.runs.edits import AgentEdit, EditField, EditProblem, invalid_fields
from core.types.agent import AgentSpec

TITLE_LIMIT = 45
LABEL_LIMIT = 45
INPUT_LIMIT = 4000
_SPLIT = re.compile(r"[,\s]+")


class Submitted(Protocol):
    """What a submitted form does (``bots.discord.decisions``)."""

    async def submit_edit(
        self,
        interaction: discord.Interaction,
        run_id: str,
        card_id: int,
        agent: AgentSpec,
        values: dict[str, str],
    ) -> None: ...


class EditModal(discord.ui.Modal):
    """The form for ``agent`` of the proposal ``run_id``, whose card is ``card_id``."""

    def __init__(self, run_id: str, card_id: int, agent: AgentSpec) -> None:
        title = truncate(f"Edit {agent.name}", TITLE_LIMIT)
        super().__init__(title=title, custom_id=f"caramba:modal:{run_id}", timeout=900)
        self.run_id, self.card_id, self.agent = run_id, card_id, agent
        budget = agent.budget
        fields: list[tuple[str, str, str, discord.TextStyle]] = [
            ("prompt", "Instructions", agent.system_prompt or agent.description, _PARAGRAPH),
            ("tools", "Tools (comma-separated)", ", ".join(agent.tools), _SHORT),
            ("model", "Model (empty: the role's default)", agent.model or "", _SHORT),
            ("tokens", "Token budget", str(budget.max_tokens or ""), _SHORT),
            ("cost", "Cost budget (USD)", _number(budget.max_cost_usd), _SHORT),
        ]
        self.inputs: dict[str, discord.ui.TextInput[EditModal]] = {}
        for key, label, default, style in fields:
            text_input: discord.ui.TextInput[EditModal] = discord.ui.TextInput(
                label=truncate(label, LABEL_LIMIT),
                custom_id=key,
                style=style,
                default=default[:INPUT_LIMIT] or None,
                required=False,
                max_length=INPUT_LIMIT,
            )
            self.inputs[key] = text_input
            self.add_item(text_input)

    def values(self) -> dict[str, str]:
        return {key: (text_input.value or "").strip() for key, text_input in self.inputs.items()}

    async def on_submit(self, interaction: discord.Interaction) -> None:
        handlers = cast(Submitted, getattr(interaction.client, "handlers"))  # noqa: B009
        values = self.values()
        await handlers.submit_edit(interaction, self.run_id, self.card_id, self.agent, values)


_PARAGRAPH, _SHORT = discord.TextStyle.paragraph, discord.TextStyle.short


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _problem(agent: AgentSpec, field: EditField, message: str) -> EditProblem:
    return EditProblem(agent_id=agent.id, agent_name=agent.name, field=field, message=message)


def edit_from_form(agent: AgentSpec, values: dict[str, str]) -> AgentEdit | list[EditProblem]:
    """The changes the form makes to ``agent`` (fields left as they were are not
    changed), or what is wrong with its values."""
    problems: list[EditProblem] = []
    change: dict[str, Any] = {"agent_id": agent.id}
    prompt = values.get("prompt", "")
    if prompt and prompt != (agent.system_prompt or agent.description):
        change["system_prompt"] = prompt
    tools = tuple(t for t in _SPLIT.split(values.get("tools", "")) if t)
    if set(tools) != set(agent.tools):
        change["tools"] = tools
    model = values.get("model", "")
    if model != (agent.model or ""):
        change["model"] = model
    tokens, cost = values.get("tokens", ""), values.get("cost", "")
    if tokens and tokens != str(agent.budget.max_tokens or ""):
        if tokens.isdigit():
            change["max_tokens"] = int(tokens)
        else:
            problems.append(_problem(agent, "tokens", "write a whole number of tokens"))
    if cost and cost != _number(agent.budget.max_cost_usd):
        try:
            change["max_cost_usd"] = float(cost.removeprefix("$"))
        except ValueError:
            problems.append(_problem(agent, "cost", "write an amount in US dollars, e.g. 1.50"))
    try:
        edit = AgentEdit(**change)
    except ValidationError as exc:
        for field, message in invalid_fields(exc):
            problems.append(_problem(agent, field or "prompt", message))
        return problems
    return problems or edit
