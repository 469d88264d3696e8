"""The files a run leaves under ``outputs/`` in its workspace, as entries of its outbox.

When a run ends, its relay queues them before the result: one upload of them all (images
shown inline where the platform does), at most the platform's ``outputs_max_files`` files
and ``outputs_max_bytes`` in all, taken in path order; a note lists those left out. If the
platform refuses the upload for good, a note says which files could not be uploaded.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath

from bots.chat.outbox import Entry
from bots.chat.ports import Artifacts, Limits, Note, OutFile, Renderer, TextFile
from core.services import Services
from core.types.files import human_size
from core.workspace.base import FileInfo

log = logging.getLogger(__name__)
OUTPUTS = "outputs/"
# Files named in a note, at most.
_NAMED = 20


def _listed(files: list[FileInfo]) -> str:
    names = ", ".join(f"{f.path} ({human_size(f.size)})" for f in files[:_NAMED])
    more = f" and {len(files) - _NAMED} more" if len(files) > _NAMED else ""
    return names + more


def pick(files: list[FileInfo], limits: Limits) -> tuple[list[FileInfo], list[FileInfo]]:
    """The files under ``outputs/`` to upload, and those past the caps."""
    sent: list[FileInfo] = []
    left: list[FileInfo] = []
    total = 0
    for f in sorted(files, key=lambda f: f.path):
        if not f.path.startswith(OUTPUTS):
            continue
        if len(sent) < limits.outputs_max_files and total + f.size <= limits.outputs_max_bytes:
            sent.append(f)
            total += f.size
        else:
            left.append(f)
    return sent, left


def _notes(run_id: str, what: str, note: Note, renderer: Renderer) -> list[Entry]:
    return [Entry.post(run_id, what, m) for m in renderer.render(note)]


def output_entries(
    run_id: str, files: list[FileInfo], limits: Limits, renderer: Renderer
) -> list[Entry]:
    """Outbox entries for the run's output files among ``files`` (none if it has none)."""
    sent, left = pick(files, limits)
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
        text = f"I could not upload the files the agents made: {_listed(sent)}."
        what = "note that the files were not uploaded"
        sorry = _notes(run_id, what, Note(text, "warning"), renderer)
        comment = "\n".join(m.text for m in renderer.render(Artifacts(run_id, out)))
        entries.append(
            Entry(
                run=run_id,
                what="output files",
                kind="files",
                text=comment,
                files=out,
                instead=tuple(sorry),
            )
        )
    if left:
        n = limits.outputs_max_files
        caps = f"at most {n} file{'' if n == 1 else 's'} and "
        caps += f"{human_size(limits.outputs_max_bytes)} per run"
        text = f"Not uploaded ({caps}): {_listed(left)}."
        entries += _notes(run_id, "note on the files left out", Note(text), renderer)
    return entries


async def queue_outputs(
    svc: Services, run_id: str, limits: Limits, renderer: Renderer
) -> list[Entry]:
    """The entries for ``run_id``'s output files, as its workspace holds them now (or a
    note that they could not be listed)."""
    try:
        files = await svc.workspace.files(run_id)
    except Exception:
        log.exception("listing the output files of %s failed", run_id)
        note = Note("I could not list the files the agents made.", "warning")
        return _notes(run_id, "note that the files could not be listed", note, renderer)
    return output_entries(run_id, files, limits, renderer)


def plain_filename(name: str) -> str:
    """An agent's file name as a plain name (no folders), at most 100 characters."""
    return PurePosixPath(name.replace("\\", "/")).name[-100:] or "post.txt"


def result_file(run_id: str, text: str) -> TextFile:
    """The whole result ``text`` as a file, kept as is (a file is not markup)."""
    name = run_id or "run"
    return TextFile(content=text, filename=f"result-{name}.md", title=f"Result of {name}")
