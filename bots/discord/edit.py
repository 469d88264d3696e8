"""Editing one agent of a proposal: a modal (Discord holds five components) with its
instructions, a model select (the configured models: ``[llm] model`` and ``[llm.models]``,
and the agent's own), a tool multi-select (the tools the registry offers, and the agent's
own), its token and cost budgets — the selects ``Label``-wrapped as discord.py 2.7 builds
them — and its submission translated into a ``core.runs.edits.AgentEdit``: core validates
it (unknown tools or models, budgets) and its problems are shown to the person who
submitted, each naming its field."""

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
OPTIONS_LIMIT = 25  # options in one select
# The model select's option for "no model of its own".
DEFAULT = "(default)"
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


def _options(chosen: list[str], offered: list[str]) -> list[str]:
    """``chosen`` first, then the rest of ``offered``, at most 25 (a select's limit)."""
    return list(dict.fromkeys([*chosen, *offered]))[:OPTIONS_LIMIT]


def model_select(agent: AgentSpec, models: list[str]) -> discord.ui.Select[Any]:
    current = agent.model or DEFAULT
    names = _options([current], [DEFAULT, *models])
    options = [
        discord.SelectOption(
            label=("The role's default" if name == DEFAULT else name)[:100],
            value=name[:100],
            default=name == current,
        )
        for name in names
    ]
    return discord.ui.Select(custom_id="model", options=options, min_values=1, max_values=1)


def tool_select(agent: AgentSpec, tools: list[str]) -> discord.ui.Select[Any]:
    names = _options(list(agent.tools), sorted(tools))
    options = [
        discord.SelectOption(label=name[:100], value=name[:100], default=name in agent.tools)
        for name in names
    ] or [discord.SelectOption(label="none", value="-")]
    return discord.ui.Select(
        custom_id="tools",
        options=options,
        min_values=0,
        max_values=len(options),
        required=False,
        placeholder="No tools",
    )


class EditModal(discord.ui.Modal):
    """The form for ``agent`` of the proposal ``run_id``, whose card is ``card_id``:
    ``models`` the model names to offer, ``tools`` the tool names."""

    def __init__(
        self,
        run_id: str,
        card_id: int,
        agent: AgentSpec,
        models: list[str] | None = None,
        tools: list[str] | None = None,
    ) -> None:
        title = truncate(f"Edit {agent.name}", TITLE_LIMIT)
        super().__init__(title=title, custom_id=f"caramba:modal:{run_id}", timeout=900)
        self.run_id, self.card_id, self.agent = run_id, card_id, agent
        budget = agent.budget
        self.prompt = _text("prompt", "Instructions", agent.system_prompt or agent.description)
        self.model = model_select(agent, models or [])
        self.tools = tool_select(agent, tools or [])
        self.tokens = _text("tokens", "Token budget", str(budget.max_tokens or ""))
        self.cost = _text("cost", "Cost budget (USD)", _number(budget.max_cost_usd))
        self.add_item(self.prompt)
        self.add_item(discord.ui.Label(text="Model", component=self.model))
        about = "The tools it may call" + (
            f" (the first {OPTIONS_LIMIT} shown)" if len(tools or []) > OPTIONS_LIMIT else ""
        )
        self.add_item(discord.ui.Label(text="Tools", component=self.tools, description=about))
        self.add_item(self.tokens)
        self.add_item(self.cost)

    def values(self) -> dict[str, str]:
        model = self.model.values[0] if self.model.values else DEFAULT
        return {
            "prompt": (self.prompt.value or "").strip(),
            "model": "" if model == DEFAULT else model,
            "tools": ", ".join(v for v in self.tools.values if v != "-"),
            "tokens": (self.tokens.value or "").strip(),
            "cost": (self.cost.value or "").strip(),
        }

    async def on_submit(self, interaction: discord.Interaction) -> None:
        handlers = cast(Submitted, getattr(interaction.client, "handlers"))  # noqa: B009
        values = self.values()
        await handlers.submit_edit(interaction, self.run_id, self.card_id, self.agent, values)


def _text(key: str, label: str, default: str) -> discord.ui.TextInput[EditModal]:
    style = discord.TextStyle.paragraph if key == "prompt" else discord.TextStyle.short
    return discord.ui.TextInput(
        label=truncate(label, LABEL_LIMIT),
        custom_id=key,
        style=style,
        default=default[:INPUT_LIMIT] or None,
        required=False,
        max_length=INPUT_LIMIT,
    )


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
        if tokens.replace(",", "").isdigit():
            change["max_tokens"] = int(tokens.replace(",", ""))
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
