"""Files in and out of Slack, offline: files attached to a mention or to a reply are
fetched from the Slack Web API fake with the bot token into the run's workspace (or
refused with a reply), and the files a run leaves under outputs/ are uploaded to its
thread when it ends — once, even when Slack's answer is lost or another bot process
takes the upload over halfway."""

from __future__ import annotations

import contextlib
import json
import shutil
import struct
import tempfile
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bots.chat.courier import Courier
from bots.chat.outbox import Entry, Outbox
from bots.chat.ports import OutFile, Place
from bots.chat.store import ChatStore
from bots.slack.adapter import slack_adapter
from bots.slack.file_upload import FileSender
from core.types.files import AttachedFile
from core.types.run import RunStatus
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import (
    ANA,
    CHANNEL,
    Harness,
    asking_design,
    quick_library,
    scripted,
    serve_bot,
)
from tests.planning_helpers import design
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
THREAD = "1700000000.000100"
CSV = b"month,sales\n" + b"".join(f"2024-{m:02d},{100 + 7 * m}\n".encode() for m in range(1, 13))


def png(width: int = 4, height: int = 3) -> bytes:
    """A real (tiny, grey) PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@contextlib.asynccontextmanager
async def files_harness(
    make_services: Any, redis: Any, plan: dict[str, Any] | None = None, **slack: Any
) -> AsyncIterator[Harness]:
    """The bot over real Redis (the workspace in it too), calling the Slack fake."""
    fake = await FakeSlackAPI().start()
    s = quick_library(planning_settings(), tempfile.mkdtemp(prefix="caramba-lib-"))
    s = s.model_copy(
        update={
            "slack": s.slack.model_copy(update={"api_url": fake.url, **slack}),
            "workspace": s.workspace.model_copy(update={"backend": "redis"}),
        }
    )
    svc = make_services(s, scripted(plan or design()), redis=redis)
    try:
        async with serve_bot(svc, fake) as h:
            yield h
    finally:
        await fake.stop()
        shutil.rmtree(s.library.index_dir, ignore_errors=True)


async def mention_with(h: Harness, text: str, *files: dict[str, Any]) -> None:
    event = {"type": "app_mention", "text": f"<@UBOT> {text}", "ts": THREAD, "event_ts": THREAD}
    assert (await h.event("EvFiles", {**event, "files": list(files)})).status_code == 200


def sharing(slack: FakeSlackAPI) -> list[tuple[str, str, str]]:
    """(file name, channel, thread) of every file shared by an upload."""
    return [(slack.filenames[f], ch, th) for f, ch, th, _ in slack.shared]


async def test_a_csv_attached_to_a_mention_is_in_the_runs_workspace(
    make_services, real_redis
) -> None:
    async with files_harness(make_services, real_redis) as h:
        await mention_with(h, "Chart the monthly sales.", h.slack.host_file("sales.csv", CSV))
        _, run_id = await h.card()
        svc = h.bot.svc
        assert await svc.workspace.read(run_id, "inputs/sales.csv") == CSV
        attached = AttachedFile(path="inputs/sales.csv", size=len(CSV), mime="text/csv")
        assert (await svc.store.get_run(run_id)).files == [attached]
        (download,) = h.slack.of("download")
        assert download["authorization"] == "Bearer xoxb-test", "fetched with the bot token"
        (planner,) = [r for r in svc.llm.requests if r.agent_name == "planner"]  # type: ignore[attr-defined]
        assert f"- {attached.describe()}" in (planner.messages[0].content or "")


async def test_a_file_the_event_only_names_is_looked_up(make_services, real_redis) -> None:
    """Slack sends some files as an id to look up (``file_access: check_file_info``)."""
    async with files_harness(make_services, real_redis) as h:
        file_id = h.slack.host_file("sales.csv", CSV)["id"]
        await mention_with(h, "Chart it.", {"id": file_id, "file_access": "check_file_info"})
        _, run_id = await h.card()
        assert h.slack.of("files.info") == [{"file": file_id}]
        assert await h.bot.svc.workspace.read(run_id, "inputs/sales.csv") == CSV


@pytest.mark.parametrize(
    ("name", "data", "claimed", "why"),
    [
        ("big.csv", CSV * 20, None, "big.csv: it is 3.0 KB; a file may be at most 1000 B"),
        # Slack's size is wrong: the download stops at the cap all the same.
        ("liar.csv", CSV * 20, 10, "liar.csv: it is 10 B; a file may be at most 1000 B"),
        ("setup.exe", b"MZ\x90\x00", None, "setup.exe: programs (.exe) are not taken"),
        ("data.csv", b"\x7fELF\x02\x01", None, "data.csv: it is a program"),
    ],
)
async def test_a_file_past_the_caps_is_refused_with_a_reply(
    make_services, real_redis, name, data, claimed, why
) -> None:
    async with files_harness(make_services, real_redis, attachment_max_bytes=1000) as h:
        good = h.slack.host_file("sales.csv", CSV[:200])
        bad = h.slack.host_file(name, data, size=claimed)
        await mention_with(h, "Chart the monthly sales.", good, bad)
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postMessage")))
        await h.bot.drain()
        (reply,) = h.slack.of("chat.postMessage")
        assert reply["thread_ts"] == THREAD
        assert reply["text"].startswith(":warning: I could not take this file:\n• " + why)
        assert "I have not started on this request" in reply["text"]
        assert h.cards() == [] and len(h.bot.relays) == 0, "no request was started"
        files = [k async for k in real_redis.scan_iter(match=f"{real_redis.test_prefix}:*files*")]
        assert files == [], "what was fetched is not kept"


async def test_the_bot_token_goes_to_slack_only(make_services, real_redis) -> None:
    async with files_harness(make_services, real_redis) as h:
        elsewhere = h.slack.host_file("sales.csv", CSV)
        elsewhere["url_private_download"] = "https://files.example.com/sales.csv"
        await mention_with(h, "Chart the monthly sales.", elsewhere)
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postMessage")))
        (reply,) = h.slack.of("chat.postMessage")
        assert "it is not on Slack's file servers (files.example.com)" in reply["text"]
        assert h.slack.of("download") == []


async def test_a_file_attached_to_a_reply_reaches_the_agent(make_services, real_redis) -> None:
    async with files_harness(make_services, real_redis, asking_design()) as h:
        run_id = await h.asked()
        fares = h.slack.host_file("fares.csv", b"airport,fare\nBER,49\n")
        reply = {
            "type": "message",
            "subtype": "file_share",
            "channel_type": "channel",
            "text": "BER, see the fares",
            "ts": "1700000000.000900",
            "thread_ts": THREAD,
            "files": [fares],
        }
        assert (await h.event("EvReply", reply)).status_code == 200
        await h.runs_end()
        svc = h.bot.svc
        assert await svc.workspace.read(run_id, "inputs/fares.csv") == b"airport,fare\nBER,49\n"
        asked = [json.dumps([m.content for m in r.messages]) for r in svc.llm.requests]  # type: ignore[attr-defined]
        assert any(
            "BER, see the fares" in a and "inputs/fares.csv (20 B, text/csv)" in a for a in asked
        )
        assert (await svc.store.get_run(run_id)).status is RunStatus.COMPLETED


async def test_outputs_are_uploaded_above_the_result(make_services, real_redis) -> None:
    async with files_harness(make_services, real_redis) as h:
        await mention_with(h, "Chart the monthly sales.")
        _, run_id = await h.card()
        # What the agents leave (written here, as a run_code or write_file call would).
        chart, summary = png(), b"# Sales\nUp 7 a month.\n"
        await h.bot.svc.workspace.write(run_id, "outputs/chart.png", chart)
        await h.bot.svc.workspace.write(run_id, "outputs/summary.md", summary)
        await h.bot.svc.workspace.write(run_id, "scratch.txt", b"not an output")
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()
        slack = h.slack
        assert sharing(slack) == [("chart.png", CHANNEL, THREAD), ("summary.md", CHANNEL, THREAD)]
        (done,) = slack.of("files.completeUploadExternal")
        assert [f["title"] for f in done["files"]] == ["chart.png", "summary.md"]
        uploaded = {slack.filenames[f]: data for f, data in slack.uploads.items()}
        assert uploaded == {"chart.png": chart, "summary.md": summary}
        assert uploaded["chart.png"].startswith(b"\x89PNG"), "an image: Slack shows it inline"
        methods = [c.method for c in slack.calls]
        last = max(i for i, m in enumerate(methods) if m == "chat.postMessage")
        assert methods.index("files.completeUploadExternal") < last
        assert "Orchestrator says: 3 flights" in slack.of("chat.postMessage")[-1]["text"]


async def test_outputs_past_the_caps_are_listed(make_services, real_redis) -> None:
    async with files_harness(make_services, real_redis, outputs_max_files=1) as h:
        await mention_with(h, "Chart the monthly sales.")
        _, run_id = await h.card()
        for name in ("a.png", "b.png"):
            await h.bot.svc.workspace.write(run_id, f"outputs/{name}", png())
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()
        assert sharing(h.slack) == [("a.png", CHANNEL, THREAD)]
        notes = [p["text"] for p in h.slack.of("chat.postMessage") if "Not uploaded" in p["text"]]
        left = f"outputs/b.png ({len(png())} B)"
        assert notes == [f"Not uploaded (at most 1 file and 50.0 MB per run): {left}."]


async def test_an_upload_whose_answer_was_lost_is_not_made_twice(make_services, real_redis) -> None:
    async with files_harness(make_services, real_redis) as h:
        await mention_with(h, "Chart the monthly sales.")
        _, run_id = await h.card()
        await h.bot.svc.workspace.write(run_id, "outputs/chart.png", png())
        # Slack shares the file, and its answer is lost: the courier tries again.
        h.slack.losing("files.completeUploadExternal")
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()
        slack = h.slack
        assert sharing(slack) == [("chart.png", CHANNEL, THREAD)], "shared once"
        assert len(slack.of("files.getUploadURLExternal")) == len(slack.uploads) == 1
        assert len(slack.of("files.info")) == 1, "the retry asked Slack instead"
        texts = [p["text"] for p in slack.of("chat.postMessage")]
        assert not any("could not upload" in t for t in texts)


class _Killed(BaseException):
    """Stands for a bot process killed mid-upload: nothing after it runs."""


async def test_a_bot_taking_an_upload_over_does_not_upload_again(make_services, real_redis) -> None:
    async with files_harness(make_services, real_redis) as h:
        svc, slack = h.bot.svc, h.slack
        run_id = "run_takeover"
        chart = png()
        await svc.workspace.write(run_id, "outputs/chart.png", chart)
        await svc.workspace.write(run_id, "outputs/notes.md", b"notes")
        out = [("outputs/chart.png", "chart.png", len(chart)), ("outputs/notes.md", "notes.md", 5)]
        entry = Entry(
            run=run_id,
            what="output files",
            kind="files",
            files=tuple(OutFile(path=p, filename=n, title=n, size=k) for p, n, k in out),
        )
        outbox = Outbox(ChatStore.of(svc, "slack"))
        first = FileSender(outbox, h.bot.client, svc.workspace, 60)
        real = h.bot.client.files_getUploadURLExternal
        asked = 0

        async def dies_at_the_second_file(**kw: Any) -> Any:
            nonlocal asked
            asked += 1
            if asked == 2:
                raise _Killed
            return await real(**kw)

        first.client = type(h.bot.client)(token="xoxb-test", base_url=slack.url)
        first.client.files_getUploadURLExternal = dies_at_the_second_file  # type: ignore[method-assign]
        with pytest.raises(_Killed):
            await first.send(entry.outgoing, Place(CHANNEL, THREAD))
        assert len(slack.uploads) == 1 and slack.shared == []

        # Another bot process's courier delivers the entry from the run's outbox.
        await outbox.add(run_id, [entry])
        second = FileSender(outbox, h.bot.client, svc.workspace, 60)
        adapter = slack_adapter(svc, h.bot.client, files=second)
        courier = Courier(outbox, adapter, run_id, Place(CHANNEL, THREAD))
        await courier.attempt(await outbox.head(run_id))
        assert sharing(slack) == [("chart.png", CHANNEL, THREAD), ("notes.md", CHANNEL, THREAD)]
        assert len(slack.uploads) == 2, "the chart's bytes went up once"
        assert sorted(slack.uploads.values()) == sorted([chart, b"notes"])
        assert (await outbox.head(run_id)).entry is None
        assert await real_redis.keys(outbox.store.keys.upload(run_id, "*")) == []
