"""Files in and out of chat, without Slack: the request carries its attached files to the
planner and to every agent's first message; names are made safe; the files a run leaves
under outputs/ become one upload within the caps, with a note on the others, and the
console lists them under the result with their place on disk."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

from rich.console import Console

from bots.chat.outputs import output_entries
from bots.console.thread import ConsoleThread
from bots.slack.adapter import slack_limits
from bots.slack.attachments import refusal_text, safe_name
from bots.slack.render import SlackRenderer
from core.config import Settings, SlackSettings
from core.runs.approval import Approve, decide
from core.runs.requests import new_run_id, plan_request, request_run
from core.types.events import RunFinished
from core.types.files import AttachedFile, human_size
from core.types.run import RunStatus
from core.workspace.base import FileInfo
from tests.planning_helpers import as_json, design, model
from tests.planning_helpers import settings as planning_settings

SALES = AttachedFile(path="inputs/sales.csv", size=2150, mime="text/csv")
NOTE = "inputs/sales.csv (2.1 KB, text/csv)"


def redis_workspace(s: Settings) -> Settings:
    """Files kept by the Redis store (fakeredis here), not in a folder of the repository."""
    ws = s.workspace.model_copy(update={"backend": "redis"})
    return s.model_copy(update={"workspace": ws})


def test_a_file_is_described_as_people_read_it() -> None:
    assert SALES.describe() == NOTE
    assert [human_size(n) for n in (0, 1023, 1024, 10 * 1024**2, 3 * 1024**3)] == [
        "0 B",
        "1023 B",
        "1.0 KB",
        "10.0 MB",
        "3.0 GB",
    ]


def test_attached_names_stay_one_file_name() -> None:
    assert safe_name("sales 2024 (Q1).csv", "f") == "sales 2024 (Q1).csv"
    assert safe_name("../../etc/passwd", "f") == "passwd"
    assert safe_name("C:\\Users\\ana\\report.xlsx", "f") == "report.xlsx"
    assert safe_name("<script>.csv", "f") == "_script_.csv"
    assert safe_name("..", "file-1") == "file-1"
    assert safe_name("", "file-2") == "file-2"
    assert len(safe_name("x" * 500 + ".csv", "f")) == 120


def test_the_reply_for_refused_files_says_what_happens_next() -> None:
    one = refusal_text(["big.csv: it is 12.0 MB; a file may be at most 10.0 MB"], started=False)
    assert one.startswith(":warning: I could not take this file:\n• big.csv: it is 12.0 MB")
    assert one.endswith("mention me again without it, or with a smaller one.")
    two = refusal_text(["a.exe: programs", "<b>.csv: x"], started=True)
    assert "these files" in two and "&lt;b&gt;.csv" in two
    assert two.endswith("The agents go on without them.")


def _info(path: str, size: int) -> FileInfo:
    return FileInfo(path=path, size=size, mime="image/png", updated_at=0.0)


def test_outputs_become_one_upload_within_the_caps() -> None:
    slack = SlackSettings(outputs_max_files=2, outputs_max_bytes=3000)
    files = [
        _info("notes.md", 10),  # not under outputs/: never uploaded
        _info("outputs/plots/chart.png", 1000),
        _info("outputs/a.csv", 500),
        _info("outputs/big.bin", 5000),  # over the bytes left
        _info("outputs/z.txt", 10),  # over the number of files
    ]
    limits, renderer = slack_limits(slack), SlackRenderer()
    upload, note = output_entries("run_1", files, limits, renderer)
    assert upload.kind == "files" and upload.run == "run_1"
    assert [(f.path, f.filename, f.title) for f in upload.files] == [
        ("outputs/a.csv", "a.csv", "a.csv"),
        ("outputs/plots/chart.png", "plots-chart.png", "plots/chart.png"),
    ]
    (sorry,) = upload.instead
    assert "could not upload the files the agents made: outputs/a.csv (500 B)" in sorry.text
    assert note.kind == "post"
    assert note.text == (
        "Not uploaded (at most 2 files and 2.9 KB per run): outputs/big.bin (4.9 KB), "
        "outputs/z.txt (10 B)."
    )
    assert output_entries("run_1", [_info("draft.md", 1)], limits, renderer) == []


async def test_the_planner_and_every_agent_are_told_of_the_attached_files(
    make_services,
) -> None:
    m = model(planner=(as_json(design()),))
    svc = make_services(redis_workspace(planning_settings(library_top_k=0)), m, start=False)
    run_id = new_run_id()
    await svc.workspace.write(run_id, SALES.path, b"x" * SALES.size)
    assert (
        await request_run(
            svc, "Chart the sales.", requested_by="@ana", run_id=run_id, files=[SALES]
        )
        == run_id
    )
    assert (await svc.store.get_run(run_id)).files == [SALES]
    await plan_request(svc, run_id)
    (planner,) = [r for r in m.requests if r.agent_name == "planner"]
    prompt = planner.messages[0].content or ""
    assert "Chart the sales.\n\nThe requester attached these files" in prompt
    assert f"- {NOTE}\n" in prompt

    assert (await decide(svc, run_id, "@ana", Approve())).ok
    for _ in range(100):
        agents = await svc.store.agent_ids(run_id)
        if agents:
            break
        await asyncio.sleep(0.01)
    firsts: list[Any] = []
    for agent_id in agents:
        state = await svc.store.load_agent(run_id, agent_id)
        firsts.append(state.thread[1].content)
    assert len(firsts) == len(design()["agents"])
    for first in firsts:
        assert first.endswith(
            f"Files attached in the chat, now in the run's workspace:\n- {NOTE}\n"
            "Read them with your file or code tools, or ask an agent who has those tools."
        )
    assert (await svc.store.get_run(run_id)).status is RunStatus.RUNNING


async def test_a_request_without_files_says_nothing_of_files(make_services) -> None:
    m = model(planner=(as_json(design()),))
    svc = make_services(redis_workspace(planning_settings(library_top_k=0)), m, start=False)
    run_id = await request_run(svc, "Chart the sales.", requested_by="@ana")
    await plan_request(svc, run_id)
    (planner,) = [r for r in m.requests if r.agent_name == "planner"]
    assert "attached" not in (planner.messages[0].content or "")


async def test_the_console_lists_the_outputs_under_the_result(
    make_services, tmp_path: Path
) -> None:
    s = planning_settings()
    s = s.model_copy(update={"workspace": s.workspace.model_copy(update={"dir": tmp_path})})
    svc = make_services(s, model(), start=False)
    await svc.workspace.write("run_1", "outputs/chart.png", b"\x89PNG" + b"0" * 2000)
    await svc.workspace.write("run_1", "inputs/sales.csv", b"month,sales\n")
    out = io.StringIO()
    shown = Console(file=out, width=200, color_system=None)
    done = RunFinished(run_id="run_1", status=RunStatus.COMPLETED, result="Sales grew.")
    await ConsoleThread(shown)(done)
    assert "Sales grew." in out.getvalue(), "without the services, the result only"
    assert "Files the agents made" not in out.getvalue()
    out.seek(0)
    out.truncate()
    thread = ConsoleThread(shown)
    thread.attach(svc)
    await thread(done)
    text = out.getvalue()
    assert text.index("Sales grew.") < text.index("Files the agents made (1):")
    where = tmp_path / "run_1" / "outputs" / "chart.png"
    assert f"📎 outputs/chart.png (2.0 KB, image/png) → {where}" in text
    assert "sales.csv" not in text and where.read_bytes().startswith(b"\x89PNG")
