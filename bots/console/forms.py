"""A form an MCP server asks for, in the console: its fields asked one line at a time
(the choices listed by number; enter leaves a field empty or takes its default), then
sent through the people room (``core.runs.people.answer_form``: who may answer, the form
still open, the check of what was typed). ``d`` declines it; in URL mode the link is
shown and ``done`` (or enter) says it was completed. Problems are said and the form is
asked again from its first field."""

from __future__ import annotations

from collections.abc import Callable

from bots.console.person import ConsoleWho
from bots.console.text import escape
from core.runs import people
from core.runs.forms import Action
from core.runs.outcomes import FormInvalid, Refused
from core.services import Services
from core.types.events import FormAsked, FormClosed
from core.types.forms import FormField, Typed
from core.types.people import Person

DECLINE = {"d", "decline"}
DONE = {"", "done", "y", "yes"}


class ConsoleForms:
    """The forms open in the run (oldest first) and what the next line means for them."""

    def __init__(self, svc: Services, person: Person, say: Callable[[str], None]) -> None:
        self.svc, self.person, self.say = svc, person, say
        self.who = ConsoleWho(person)
        self.open: list[FormAsked] = []
        self.typed: dict[str, Typed] = {}

    @property
    def pending(self) -> bool:
        return bool(self.open)

    def asked(self, event: FormAsked) -> None:
        self.open.append(event)
        if len(self.open) == 1:
            self._offer()

    def closed(self, event: FormClosed) -> None:
        first = self.open[0].form_id if self.open else None
        self.open = [f for f in self.open if f.form_id != event.form_id]
        if first == event.form_id:
            self.typed = {}
            if self.open:
                self._offer()

    def _offer(self) -> None:
        form = self.open[0]
        self.say(f"  [bold yellow]📝 {escape(form.server)} asks:[/] {escape(form.message)}")
        if form.url:
            self.say(f"  open {escape(form.url)}")
            self.say("  [bold]↳ enter[/] when done, [bold]d[/]: decline")
            return
        self.say("  [dim](d: decline the form; enter: leave a field empty)[/]")
        self._ask_next()

    def _next(self) -> FormField | None:
        return next((f for f in self.open[0].fields if f.name not in self.typed), None)

    def _ask_next(self) -> None:
        field = self._next()
        if field is None:
            return
        need = " (required)" if field.required else ""
        if field.options:
            listed = ", ".join(f"{i}: {o.label}" for i, o in enumerate(field.options, 1))
            more = " — numbers, separated by commas" if field.kind == "choices" else ""
            self.say(f"  [bold]↳ {escape(field.label)}[/]{need} [dim]{escape(listed)}{more}[/]")
        elif field.kind == "boolean":
            self.say(f"  [bold]↳ {escape(field.label)}[/]{need} [dim](y/n)[/]")
        else:
            self.say(f"  [bold]↳ {escape(field.label)}[/]{need}")

    async def take(self, text: str) -> None:
        """One line the person typed while a form is open."""
        form = self.open[0]
        if text.lower() in DECLINE:
            await self._send("decline")
        elif form.url or not form.fields:
            if text.lower() in DONE:
                await self._send("accept")
            else:
                self.say("  [dim]enter when done, d: decline[/]")
        else:
            field = self._next()
            assert field is not None
            self.typed[field.name] = _value(field, text)
            if self._next() is None:
                await self._send("accept")
            else:
                self._ask_next()

    async def _send(self, act: Action) -> None:
        form = self.open[0]
        outcome = await people.answer_form(
            self.svc, form.run_id, form.form_id, self.person, act, self.typed, who=self.who
        )
        if isinstance(outcome, FormInvalid):
            for line in outcome.lines:
                self.say(f"  [red]{escape(line)}[/]")
            self.typed = {}
            self._ask_next()
            return
        # the form's closing event may have come in while the answer was sent (and offered
        # the next form already)
        still = any(f.form_id == form.form_id for f in self.open)
        self.open = [f for f in self.open if f.form_id != form.form_id]
        self.typed = {}
        if isinstance(outcome, Refused):
            self.say(f"  [red]{escape(outcome.reason)}[/]")
        else:
            self.say(f"  [green]✓ {escape(outcome.line)}[/]")
        if self.open and still:
            self._offer()


def _value(field: FormField, text: str) -> Typed:
    """A line as the field's value: numbers pick choices; empty takes the default."""
    text = text.strip()
    if not text and field.default is not None:
        default = field.default
        return default if isinstance(default, str | bool | list) else str(default)
    if field.kind == "boolean":
        return text.lower() in ("y", "yes", "true", "1")
    if field.options:
        picked = []
        for part in text.split(","):
            part = part.strip()
            index = int(part) - 1 if part.isdigit() else -1
            picked.append(field.options[index].value if 0 <= index < len(field.options) else part)
        picked = [p for p in picked if p]
        return picked if field.kind == "choices" else (picked[0] if picked else "")
    return text
