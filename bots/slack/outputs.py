"""The files a run leaves under ``outputs/`` in its workspace, as entries of its outbox.

When a run ends, its relay queues them before the result: one upload of them all (images
shown inline), at most ``slack.outputs_max_files`` files and ``slack.outputs_max_bytes``
in all, taken in path order; a note lists those left out. If Slack refuses the upload for
good, a note says which files could not be uploaded.
"""

from __future__ import annotations

import logging

from bots.slack.outbox import Entry, OutFile
from bots.slack.text import escape
from core.config import SlackSettings
from core.services import Services
from core.types.files import human_size
from core.workspace.base import FileInfo

log = logging.getLogger(__name__)
OUTPUTS = "outputs/"
# Files named in a note, at most.
_NAMED = 20


def _listed(files: list[FileInfo]) -> str:
    names = ", ".join(f"{escape(f.path)} ({human_size(f.size)})" for f in files[:_NAMED])
    more = f" and {len(files) - _NAMED} more" if len(files) > _NAMED else ""
    return names + more


def pick(files: list[FileInfo], slack: SlackSettings) -> tuple[list[FileInfo], list[FileInfo]]:
    """The files under ``outputs/`` to upload, and those past the caps."""
    sent: list[FileInfo] = []
    left: list[FileInfo] = []
    total = 0
    for f in sorted(files, key=lambda f: f.path):
        if not f.path.startswith(OUTPUTS):
            continue
        if len(sent) < slack.outputs_max_files and total + f.size <= slack.outputs_max_bytes:
            sent.append(f)
            total += f.size
        else:
            left.append(f)
    return sent, left


def output_entries(run_id: str, files: list[FileInfo], slack: SlackSettings) -> list[Entry]:
    """Outbox entries for the run's output files among ``files`` (none if it has none)."""
    sent, left = pick(files, slack)
    entries: list[Entry] = []
    if sent:
        out = tuple(
            OutFile(
                path=f.path,
                filename=f.path.removeprefix(OUTPUTS).replace("/", "-"),
                title=f.path.removeprefix(OUTPUTS),
                size=f.size,
            )
            for f in sent
        )
        sorry = Entry(
            run=run_id,
            what="note that the files were not uploaded",
            text=f":warning: I could not upload the files the agents made: {_listed(sent)}.",
        )
        entries.append(
            Entry(run=run_id, what="output files", kind="files", files=out, instead=(sorry,))
        )
    if left:
        n = slack.outputs_max_files
        caps = f"at most {n} file{'' if n == 1 else 's'} and "
        caps += f"{human_size(slack.outputs_max_bytes)} per run"
        entries.append(
            Entry(
                run=run_id,
                what="note on the files left out",
                text=f"Not uploaded ({caps}): {_listed(left)}.",
            )
        )
    return entries


async def queue_outputs(svc: Services, run_id: str) -> list[Entry]:
    """The entries for ``run_id``'s output files, as its workspace holds them now (or a
    note that they could not be listed)."""
    try:
        files = await svc.workspace.files(run_id)
    except Exception:
        log.exception("listing the output files of %s failed", run_id)
        text = ":warning: I could not list the files the agents made."
        return [Entry(run=run_id, what="note that the files could not be listed", text=text)]
    return output_entries(run_id, files, svc.settings.slack)
