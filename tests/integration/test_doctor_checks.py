"""``caramba doctor``'s checks of the model's tool calling (the HTTP LLM fake scripted to
call the tool, or to answer in text), the MCP servers (a real one, one that cannot start,
one switched off), the image model, the 80-column output, and the whole command run as a
real process at 80 columns."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from bots.cli_doctor import print_checks
from core.process.doctor_images import check_images
from core.process.doctor_live import check_model_calls
from core.process.doctor_mcp import check_mcp
from core.process.doctor_types import Check, Level
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLMServer, FakeReply
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.processes import PROJECT_ROOT, worker_env

pytestmark = pytest.mark.integration
MCP_FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")
PROBE = "record_word"


async def test_a_model_that_calls_the_tool_is_a_yes() -> None:
    async with FakeLLMServer() as llm:
        llm.script(FakeReply(content="OK"), FakeReply(tool_calls=[(PROBE, {"word": "ready"})]))
        settings = make_settings(llm={"model": "openai/fake", "api_base": llm.base_url})
        call, tools = await check_model_calls(settings)
    assert call.level is Level.OK and "answered 'OK'" in call.detail
    assert tools.name == "calls tools" and tools.level is Level.OK
    assert tools.detail.startswith("yes")
    offered = llm.requests[1]["tools"]
    assert [t["function"]["name"] for t in offered] == [PROBE]
    assert len(llm.requests) == 2


async def test_a_model_that_answers_in_text_is_a_no_naming_the_setting() -> None:
    async with FakeLLMServer() as llm:
        llm.script(FakeReply(content="OK"), FakeReply(content="Sure, the word is ready."))
        settings = make_settings(
            llm={
                "model": "openai/fake",
                "api_base": llm.base_url,
                "models": {"planning": "openai/big"},
            }
        )
        _, tools = await check_model_calls(settings)
    assert tools.level is Level.WARN
    assert tools.detail.startswith("no — planning needs yes") and "openai/big" in tools.detail
    assert "[llm.models]" in tools.fix and "CARAMBA_LLM__MODELS__PLANNING" in tools.fix
    assert llm.requests[1]["model"] == "big"  # the planning model was the one tried


async def test_a_call_written_in_the_text_counts() -> None:
    async with FakeLLMServer() as llm:
        written = json.dumps({"tool": PROBE, "arguments": {"word": "ready"}})
        llm.script(FakeReply(content="OK"), FakeReply(content=f"```json\n{written}\n```"))
        settings = make_settings(llm={"model": "openai/fake", "api_base": llm.base_url})
        _, tools = await check_model_calls(settings)
    assert tools.level is Level.OK and tools.detail.startswith("yes, in its text")


async def test_no_tool_probe_when_the_model_does_not_answer() -> None:
    async with FakeLLMServer() as llm:
        llm.script(FakeReply(content="OK"))
        settings = make_settings(llm={"model": "openai/fake", "api_base": "http://127.0.0.1:1/v1"})
        checks = await check_model_calls(settings)
    assert [c.name for c in checks] == ["model call"] and checks[0].level is Level.FAIL


async def test_each_mcp_server_is_started_and_its_tools_listed() -> None:
    servers = {
        "fake": {"command": sys.executable, "args": [MCP_FAKE]},
        "gone": {"command": "/nonexistent/mcp-server"},
        "off": {"command": "/nonexistent/other", "enabled": False},
    }
    settings = make_settings(mcp={"connect_timeout_s": 15.0, "servers": servers})
    fake, gone, off = await check_mcp(settings)
    assert fake.name == "MCP fake" and fake.level is Level.OK
    count = int(fake.detail.split(" tools")[0])
    assert count >= 4 and "add" in fake.detail and "more" in fake.detail  # trimmed
    assert gone.name == "MCP gone" and gone.level is Level.FAIL
    assert "/nonexistent/mcp-server" in gone.detail and "mcp.servers.gone" in gone.fix
    assert off.level is Level.WARN and "enabled = false" in off.detail
    (none,) = await check_mcp(make_settings())
    assert none.level is Level.OK and "no servers configured" in none.detail


def test_the_image_model_and_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    no_key = check_images(make_settings())
    assert no_key.level is Level.WARN and "OPENAI_API_KEY" in no_key.detail
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ok = check_images(make_settings())
    assert ok.level is Level.OK and "gpt-image-1" in ok.detail and "not tried" in ok.detail
    empty = check_images(make_settings(images={"model": ""}))
    assert empty.level is Level.WARN and "images.model is empty" in empty.detail
    named = check_images(make_settings(images={"api_key_env": "MY_IMAGE_KEY"}))
    assert named.level is Level.WARN and "MY_IMAGE_KEY" in named.fix
    local = check_images(make_settings(images={"api_base": "http://127.0.0.1:1/v1"}))
    assert local.level is Level.OK


def test_the_output_reads_at_80_columns() -> None:
    long = (
        "present, but https://slack.example.internal/api/auth.test could not be reached "
        "after a long wait, which is a sentence long enough to need two or three lines"
    )
    checks = [
        Check("config", Level.OK, "loaded config.toml"),
        Check("a rather long check name", Level.WARN, long, "export SOMETHING=... and retry"),
        Check("calls tools", Level.FAIL, "no — planning needs yes", "set planning under it"),
    ]
    buffer = io.StringIO()
    print_checks(checks, Console(file=buffer, width=80, color_system=None))
    lines = buffer.getvalue().splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    words = " ".join(line[19:].strip() for line in lines).split()  # the detail column
    for word in (*long.split(), "SOMETHING=..."):
        assert word in words, f"{word!r} was cut: {lines}"
    assert lines[0].startswith("ok   config")
    assert any(line.lstrip().startswith("→ export SOMETHING") for line in lines)


async def test_caramba_doctor_as_a_real_process_at_80_columns() -> None:
    """The command itself, at 80 columns: HTTP-mode Slack recognised and its token accepted
    (the Slack fake), the MCP server's tools, the model's call and its tool call."""
    slack = await FakeSlackAPI().start()
    async with FakeLLMServer() as llm:
        llm.script(FakeReply(content="OK"), FakeReply(tool_calls=[(PROBE, {"word": "ready"})]))
        mcp = {"fake": {"command": sys.executable, "args": [MCP_FAKE]}}
        env = worker_env(
            redis__url="redis://127.0.0.1:6379/15",
            slack__api_url=slack.url,
            llm__model="openai/fake",
            llm__api_base=llm.base_url,
            mcp__servers=json.dumps(mcp),
        )
        env |= {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "secret", "COLUMNS": "80"}
        for name in ("SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN"):
            env.pop(name, None)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.cli", "doctor",
            env=env, cwd=PROJECT_ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        raw, _ = await asyncio.wait_for(proc.communicate(), 120)
    await slack.stop()
    out = raw.decode()
    assert proc.returncode == 0, out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    assert "Slack adapter disabled" not in out
    assert "HTTP mode" in out and "accepted: the bot is caramba in T1" in out
    assert any(line.startswith("ok   MCP fake") for line in lines), out
    assert "yes: openai/fake called the tool" in " ".join(out.split()), out
    assert [c.method for c in slack.calls] == ["auth.test"]
    assert len(llm.requests) == 2


async def test_the_redis_check_never_prints_the_password_in_its_url() -> None:
    from core.process.doctor import _check_redis

    closed = make_settings(redis={"url": "redis://:s3cret@127.0.0.1:1/0"})
    check = await _check_redis(closed)
    assert check.level is Level.FAIL
    assert "s3cret" not in check.detail + check.fix
    assert "redis://:***@127.0.0.1:1/0" in check.detail and "redis-server" in check.fix
