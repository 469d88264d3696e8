"""The web chat's Edit form for one agent of a proposal: what it shows (instructions,
tools, model, token and cost budgets) and its submission translated into a
``core.runs.edits.AgentEdit`` — core then validates it (unknown tools or models), and
every problem is shown next to its field."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from core.runs.edits import FORM_FIELDS, AgentEdit, EditProblem, invalid_fields
from core.types.agent import AgentSpec


@dataclass
class AgentForm:
    """The form's values for one agent, and the problems to show beside each field
    (``agent``: above the form)."""

    agent: AgentSpec
    prompt: str
    tools: tuple[str, ...]
    model: str
    tokens: str
    cost: str
    errors: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, agent: AgentSpec, base_tools: Iterable[str]) -> AgentForm:
        """The form as the proposal stands (the base tools every agent keeps left out)."""
        base = set(base_tools)
        return cls(
            agent=agent,
            prompt=agent.system_prompt or agent.description,
            tools=tuple(t for t in agent.tools if t not in base),
            model=agent.model or "",
            tokens=str(agent.budget.max_tokens or ""),
            cost=_number(agent.budget.max_cost_usd),
        )

    @classmethod
    def submitted(cls, agent: AgentSpec, values: dict[str, list[str]]) -> AgentForm:
        def one(name: str) -> str:
            return (values.get(name) or [""])[-1].strip()

        chosen = tuple(dict.fromkeys(t.strip() for t in values.get("tools", []) if t.strip()))
        return cls(agent, one("prompt"), chosen, one("model"), one("tokens"), one("cost"))

    def problem(self, where: str, message: str) -> None:
        self.errors.setdefault(where, []).append(message)

    def show(self, problems: Iterable[EditProblem]) -> AgentForm:
        """``problems`` (core's) each beside its field; returns the form."""
        for p in problems:
            self.problem(p.field if p.field in FORM_FIELDS.values() else "agent", p.message)
        return self


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def edit_from_form(form: AgentForm, base_tools: Iterable[str]) -> AgentEdit | None:
    """The changes the submitted ``form`` makes to its agent (fields left as they were
    are not changed), or None with the problems of its values noted on the form."""
    agent, base = form.agent, set(base_tools)
    change: dict[str, Any] = {"agent_id": agent.id}
    if form.prompt != (agent.system_prompt or agent.description).strip():
        change["system_prompt"] = form.prompt
    if set(form.tools) != {t for t in agent.tools if t not in base}:
        change["tools"] = form.tools
    if form.model != (agent.model or ""):
        change["model"] = form.model
    if form.tokens != str(agent.budget.max_tokens or ""):
        tokens = form.tokens.replace(",", "").replace("_", "")
        if not tokens.isdigit() or int(tokens) < 1000:
            form.problem("tokens", "write a whole number of tokens, at least 1000")
        else:
            change["max_tokens"] = int(tokens)
    if form.cost != _number(agent.budget.max_cost_usd):
        try:
            cost = float(form.cost.removeprefix("$") or "nan")
        except ValueError:
            cost = float("nan")
        if not cost >= 0:  # also NaN: not a number, or left empty
            form.problem("cost", "write an amount in US dollars, e.g. 1.50")
        else:
            change["max_cost_usd"] = cost
    try:
        edit = AgentEdit(**change)
    except ValidationError as exc:
        for field, message in invalid_fields(exc):
            form.problem(field or "agent", message)
        return None
    return None if form.errors else edit


def changed_words(edit: AgentEdit) -> list[str]:
    """What an edit changes, in words ("instructions", "model"…)."""
    words = {
        "system_prompt": "instructions",
        "tools": "tools",
        "model": "model",
        "max_tokens": "token budget",
        "max_cost_usd": "cost budget",
    }
    made = edit.model_dump(exclude={"agent_id"}, exclude_defaults=True)
    return [w for k, w in words.items() if k in made]
