"""The console's edit form: one agent's fields asked in turn, each checked as it is given.

A value that is refused (``abc`` for a token budget, a tool that does not exist, a model
Caramba cannot call) is said in a plain sentence and that field alone is asked again; the
fields already given are kept. The rules are core's (``core.runs.edits``: the
``AgentEdit`` model and ``apply_edit``'s problems per field), tried through ``check``
before anything is sent; this form only reads numbers and lists from what was typed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from rich.console import Console

from bots.console.card import money, tokens
from bots.console.text import escape
from core.runs.approval import AgentCard, ProposalView
from core.runs.edits import AgentEdit, Edit, EditField, EditProblem, invalid_fields
from core.types.figures import number

Said = Callable[..., str]  # asks a question (rich Prompt.ask's options), returns the answer
Check = Callable[[AgentEdit], Sequence[EditProblem]]  # core's problems with an edit
MIN_TOKENS = 1000  # AgentEdit.max_tokens's floor (core.runs.edits)


@dataclass(frozen=True)
class Field:
    name: EditField
    attribute: str  # of AgentEdit
    question: str
    read: Callable[[str], object]  # what was typed → the value; ValueError: refused


def _fields(agent: AgentCard) -> list[Field]:
    keep_tokens = tokens(agent.max_tokens) if agent.max_tokens else "the default budget"
    keep_cost = money(agent.max_cost_usd) if agent.max_cost_usd is not None else "no cost limit"
    return [
        Field("prompt", "system_prompt", "New instructions (enter keeps them)", str.strip),
        Field(
            "tools",
            "tools",
            "Tools, comma-separated; +name adds one, -name takes one away "
            f"(enter keeps {', '.join(agent.tools) or 'none'})",
            lambda text: _tool_list(text, agent.tools),
        ),
        Field("model", "model", f"Model (enter keeps {agent.model})", str.strip),
        Field(
            "tokens",
            "max_tokens",
            f"Token budget (enter keeps {keep_tokens})",
            lambda text: _token_count(text, keep_tokens),
        ),
        Field(
            "cost",
            "max_cost_usd",
            f"Cost budget in dollars (enter keeps {keep_cost})",
            lambda text: _dollars(text, keep_cost),
        ),
    ]


def pick_agent(said: Said, console: Console, agents: Sequence[AgentCard]) -> AgentCard:
    """The agent to edit, by its number on the card or its name."""
    while True:
        typed = said(f"Which agent (1-{len(agents)}, or a name)", default="1").strip()
        if typed.isdigit() and 1 <= int(typed) <= len(agents):
            return agents[int(typed) - 1]
        named = [a for a in agents if a.name.casefold() == typed.casefold()]
        if named:
            return named[0]
        console.print(
            f"  [red]No agent {escape(typed)}:[/] type a number from 1 to {len(agents)} "
            "(as on the card) or an agent's name."
        )


def edit_agent(
    said: Said, console: Console, view: ProposalView, check: Check | None = None
) -> Edit | None:
    """Ask which agent and what changes; None if nothing was changed."""
    agent = pick_agent(said, console, view.agents)
    if agent.parent is not None:
        under = _below(agent, view.agents)
        also = f" and the {under} agent{'s' if under > 1 else ''} under it" if under else ""
        if said(f"Remove {escape(agent.name)}{also}?", choices=["y", "n"], default="n") == "y":
            return Edit(agents=(AgentEdit(agent_id=agent.id, remove=True),))
    fields = _fields(agent)
    values: dict[str, object] = {}
    pending = fields
    while pending:
        for field in pending:
            _ask(said, console, agent, field, values, check)
        if not values:
            console.print("  Nothing changed.")
            return None
        _, problems = _try(agent, values, check)
        wrong = {p.field for p in problems}
        pending = [f for f in fields if f.name in wrong]
        _show(console, problems)
        if problems and not pending:  # not about a field asked here (the agent is gone)
            break
    return Edit(agents=(AgentEdit(agent_id=agent.id, **values),))  # type: ignore[arg-type]


def _ask(
    said: Said,
    console: Console,
    agent: AgentCard,
    field: Field,
    values: dict[str, object],
    check: Check | None,
) -> None:
    """Ask ``field`` until it is left empty (kept as it is) or given a value core takes."""
    values.pop(field.attribute, None)
    while True:
        typed = said(escape(field.question), default="", show_default=False).strip()
        if not typed:
            return
        try:
            value = field.read(typed)
        except ValueError as refused:
            console.print(f"  [red]{escape(str(refused))}[/]")
            continue
        _, problems = _try(agent, {**values, field.attribute: value}, check)
        mine = [p for p in problems if p.field == field.name]
        if not mine:
            values[field.attribute] = value
            return
        _show(console, mine)


def _try(
    agent: AgentCard, values: dict[str, object], check: Check | None
) -> tuple[AgentEdit | None, list[EditProblem]]:
    """The edit ``values`` make, and core's problems with it, each under its field."""
    try:
        change = AgentEdit(agent_id=agent.id, **values)  # type: ignore[arg-type]
    except ValidationError as exc:
        return None, [
            EditProblem(
                agent_id=agent.id, agent_name=agent.name, field=field or "agent", message=msg
            )
            for field, msg in invalid_fields(exc)
        ]
    return change, list(check(change)) if check is not None else []


def _show(console: Console, problems: Sequence[EditProblem]) -> None:
    for p in problems:
        console.print(f"  [red]Not changed:[/] {escape(str(p))} — type it again.")


def _below(agent: AgentCard, agents: Sequence[AgentCard]) -> int:
    """How many agents are under ``agent``, at any depth (removed with it)."""
    doomed = {agent.name}
    while grown := {a.name for a in agents if a.parent in doomed} - doomed:
        doomed |= grown
    return len(doomed) - 1


def _tool_list(text: str, current: Sequence[str]) -> tuple[str, ...]:
    """The tools typed ("a, b"), or the current ones changed ("+a, -b")."""
    typed = [t.strip() for t in text.split(",") if t.strip()]
    if not typed:
        raise ValueError("No tools named: write tool names separated by commas.")
    if all(t[0] in "+-" for t in typed):
        names = list(current)
        for t in typed:
            name = t[1:].strip()
            if t[0] == "+" and name not in names:
                names.append(name)
            elif t[0] == "-" and name in names:
                names.remove(name)
    elif any(t[0] in "+-" for t in typed):
        raise ValueError(
            "Either list the tools the agent should have, or change its list with +name "
            "and -name only: not both."
        )
    else:
        names = typed
    if not names:
        raise ValueError("An agent needs at least one tool: name one, or press enter to keep.")
    return tuple(dict.fromkeys(names))


def _number(text: str) -> float:
    """ "120,000", "120_000", "120k", "1.5m", "$0.50" → a number (ValueError if not)."""
    plain = text.strip().lstrip("$").replace(",", "").replace("_", "").replace(" ", "")
    scale = {"k": 1e3, "m": 1e6}.get(plain[-1:].lower(), 1.0) if plain else 1.0
    value = float(plain[:-1] if scale != 1.0 else plain) * scale
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _token_count(text: str, keep: str) -> int:
    how = (
        f"write a whole number of tokens, at least {number(MIN_TOKENS)}, "
        f"or leave it empty to keep {keep}"
    )
    try:
        value = _number(text)
    except ValueError:
        raise ValueError(f"Not a number: {how}.") from None
    if value != int(value):
        raise ValueError(f"Not a whole number: {how}.")
    if value < MIN_TOKENS:
        raise ValueError(f"Too small for an agent: {how}.")
    return int(value)


def _dollars(text: str, keep: str) -> float:
    how = f"write an amount in dollars such as 0.50, or leave it empty to keep {keep}"
    try:
        value = _number(text)
    except ValueError:
        raise ValueError(f"Not an amount: {how}.") from None
    if value < 0:
        raise ValueError(f"Not below zero: {how}.")
    return value
