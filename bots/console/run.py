"""``caramba run``: a task planned (or a saved cohort taken), the proposal decided, the
run followed with the person's input, then a rating and a name for a run that ran."""

from __future__ import annotations

import asyncio
import sys

from rich.console import Console
from rich.prompt import Prompt

from bots.console import proposal
from bots.console.lines import Lines
from bots.console.logs import FileLogs
from bots.console.person import console_person
from bots.console.session import RunConsole
from bots.console.text import escape
from bots.console.thread import ConsoleThread
from core.config import Settings
from core.errors import UsageError
from core.library import Library
from core.planning import plan
from core.process import wiring
from core.process.embedded import embedded_services, run_proposal
from core.runs import learning, people
from core.runs.approval import Approve, Decision, ProposalView
from core.runs.control import start_run
from core.runs.edits import AgentEdit, Edit, EditProblem, apply_edit
from core.services import Services
from core.types.agent import AgentSpec
from core.types.cohort import Cohort
from core.types.figures import tokens
from core.types.run import RunState, RunStatus


class RunTask:
    """One ``caramba run``: the person's prompts (read from ``lines``) and the run's
    thread in the terminal (``thread``)."""

    def __init__(self, console: Console, thread: ConsoleThread, lines: Lines, *, yes: bool) -> None:
        self.console, self.thread, self.lines, self.yes = console, thread, lines, yes
        self.stream = lines.prompt_stream()
        self.person = console_person()

    def asked(self, question: str) -> str:
        """The answer to ``question`` ("" once the input ended: skipped)."""
        try:
            said = Prompt.ask(
                question, console=self.console, default="", show_default=False, stream=self.stream
            )
        except EOFError:  # nobody left to answer: skipped
            self.console.print()
            return ""
        return str(said)

    async def decide(self, svc: Services, view: ProposalView) -> Decision:
        """The person's decision about the proposal (approved with --yes)."""
        if self.yes:
            self.console.print(proposal.card(view))
            return Approve()
        run = await svc.store.get_run(view.run_id)

        def check(change: AgentEdit) -> list[EditProblem]:
            """Core's problems with ``change`` to the proposal as it is now."""
            return apply_edit(run, Edit(agents=(change,)), svc.tools, svc.settings)[1]

        try:
            return await asyncio.to_thread(proposal.ask, self.console, view, self.stream, check)
        except EOFError:
            self.console.print()
            raise UsageError(
                "the input ended before anyone decided about the proposal: nothing was run",
                hint="answer at a terminal, or pass --yes to approve without asking",
            ) from None

    async def design(
        self, svc: Services, task: str, cohort: str, library: Library
    ) -> Cohort | AgentSpec:
        """The saved cohort named ``cohort``, else what planning made of ``task``: a
        cohort to propose, or the agent that answers it directly."""
        if cohort:
            entry = await library.get_by_name(cohort)
            if entry.cohort is None:
                raise UsageError(
                    f"{cohort!r} names an agent, not a cohort",
                    hint="pass the name a cohort was saved under",
                )
            return entry.cohort.model_copy(update={"task": task})
        with self.console.status("Planning…"):
            outcome = await plan(svc.settings, svc.llm, svc.tools, task, library=library)
        # A note (the model could not route or design) says the reason and what to do.
        reason = outcome.decision.reason
        if outcome.note and reason in outcome.note:
            reason = outcome.note
        self.console.print(
            f"[dim]{outcome.path}: {escape(reason)} "
            f"({outcome.llm_calls} planning calls, {tokens(outcome.usage.total_tokens)})[/]"
        )
        if outcome.direct is not None:
            return outcome.direct
        assert outcome.cohort is not None
        return outcome.cohort

    async def rate_and_name(self, svc: Services, final: RunState, library: Library) -> None:
        """Only a run that ran is named (not a rejected or cancelled one), and only a
        result is rated: a failure is not offered for rating as if it were one."""
        ran = final.status in (RunStatus.COMPLETED, RunStatus.FAILED)
        if not ran or final.cohort is None or self.yes:
            return
        if final.status is RunStatus.COMPLETED:
            stars = await asyncio.to_thread(self.asked, "Rate the result 1-5 (enter: skip)")
            if stars.strip() in {"1", "2", "3", "4", "5"}:
                rated = await people.rate(svc, final.id, self.person, stars=int(stars))
                self.console.print(f"[dim]{escape(rated.line)}[/]")
        name = (await asyncio.to_thread(self.asked, "Save this cohort as (enter: skip)")).strip()
        if name:
            await learning.save_as(library, final, name)
            self.console.print(
                f'Saved as {escape(name)}: caramba run --cohort {escape(name)} "…" runs it again.'
            )


async def run_task(
    settings: Settings,
    console: Console,
    task: str,
    thread: ConsoleThread,
    lines: Lines,
    logs: FileLogs,
    *,
    yes: bool,
    cohort: str,
) -> RunState:
    """``caramba run``'s flow: plan (or take a saved cohort), the card, the run followed
    with the person's input, then a rating and a name for a run that ran."""
    flow = RunTask(console, thread, lines, yes=yes)
    llm = wiring.build_llm(settings)  # looked up here: tests put a scripted model in
    logs.quiet_litellm()  # litellm adds its own stderr handlers when it loads
    async with embedded_services(settings, llm) as svc:
        thread.attach(svc)  # the run's files and budget figures, from its services
        person = flow.person
        interactive = sys.stdin.isatty()
        runner = RunConsole(svc, console, thread, lines, person=person, hold_empty=not interactive)
        library = await svc.library()
        designed = await flow.design(svc, task, cohort, library)
        if isinstance(designed, AgentSpec):
            return await runner.follow(await start_run(svc, task, designed, requested_by=person.id))
        final = await run_proposal(
            svc,
            task,
            designed,
            lambda view: flow.decide(svc, view),
            on_message=lambda text: console.print(escape(text)),
            person=person,
            library=library,
            follow_run=runner.follow,
        )
        await flow.rate_and_name(svc, final, library)
        return final
