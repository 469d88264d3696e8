"""A form an MCP server asks the run's people for (elicitation), in its thread: the
relay's side (the :class:`~bots.chat.intentions.Form` posted, the status line saying the
run waits for it, a line when nobody answered in time) and the words every adapter
shows. The buttons and the forms themselves are the adapters' (a Slack modal, a Discord
modal, a web form, console prompts); what a person does goes to
``core.runs.people.open_form`` / ``answer_form``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bots.chat.intentions import Form, Note
from core.types.events import FormAsked, FormClosed

if TYPE_CHECKING:
    from bots.chat.relay import ThreadRelay

# The status line's ``doing`` while a tool call waits for a form.
WAITING = "waits for a person to answer a form"
FILL_LABEL = "Fill in"
DONE_LABEL = "Done"
CONFIRM_LABEL = "Confirm"
DECLINE_LABEL = "Decline"
SUBMIT_LABEL = "Send"
TIMED_OUT = "Nobody answered the form in time: its tool was told it was cancelled."
# The form's title where a platform has one (Slack: at most 24 characters).
TITLE = "Form"


def asks(form: Form) -> str:
    """The first line, in plain words (not escaped)."""
    return f"📝 {form.server} asks (for {form.agent}'s work): {form.message}"


def how(form: Form) -> str:
    """What to do with it, in plain words."""
    if form.url:
        return "Open the link, then press Done (or Decline)."
    if form.fields:
        return f"Press {FILL_LABEL} to answer (or {DECLINE_LABEL})."
    return f"Press {CONFIRM_LABEL} to go on (or {DECLINE_LABEL})."


def safe_link(url: str | None) -> str | None:
    """``url`` if it is a web link worth making clickable (http or https), else None: a
    server's other schemes are shown as text only."""
    if (
        url
        and url.lower().startswith(("https://", "http://"))
        and not any(c.isspace() or c in "<>|" for c in url)
    ):
        return url
    return None


def follow_form(relay: ThreadRelay, event: FormAsked | FormClosed) -> None:
    """The relay's part: the form posted and the status line saying the run waits for
    it; once it is closed the status line goes on, and a time-out gets a line."""
    if isinstance(event, FormAsked):
        who = relay._who(event.agent_id)
        relay._status(phase="running", who=who, doing=WAITING, tool="")
        relay.show_status(force=True)
        form = Form(
            run_id=relay.run_id,
            form_id=event.form_id,
            agent=who,
            server=event.server,
            message=event.message,
            fields=event.fields,
            url=event.url,
        )
        relay.reply("form", form)
        return
    if relay.line.doing == WAITING:
        relay._status(doing="goes on after the form", tool="")
        relay.show_status(force=True)
    if event.timed_out:
        relay.reply("form timed out", Note(TIMED_OUT, "warning"))
