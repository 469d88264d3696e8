"""run_code without a sandbox is unavailable with the reason (never run unsandboxed);
the sandbox's command line, its bounded output and its report. (The real sandbox:
tests/integration/test_sandbox.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from core.agent.context import ToolContext
from core.config_tools import SandboxSettings
from core.errors import ToolRetry
from core.llm.scripted import ScriptedModel
from core.process.doctor_sandbox import check_sandbox
from core.process.doctor_types import Level
from core.tools.code import run_code
from core.tools.defaults import default_registry
from core.tools.sandbox.layout import Interpreter, Tools, bwrap_command, workdir_for
from core.tools.sandbox.output import Captured
from core.tools.sandbox.report import render
from core.tools.sandbox.runner import Outcome
from core.tools.sandbox.sync import SyncReport
from core.types.agent import AgentSpec, AgentState
from tests.conftest import make_settings


def test_run_code_is_unavailable_with_the_reason_without_bwrap() -> None:
    settings = make_settings(sandbox={"bwrap": "/nonexistent/bwrap"})
    registry = default_registry(settings)
    assert "run_code" not in registry
    reason = registry.unavailable["run_code"]
    assert "bubblewrap not found" in reason and "apt-get install bubblewrap" in reason
    assert "never runs unsandboxed" in reason
    check = check_sandbox(settings)
    assert check.level is Level.WARN and "run_code is unavailable" in check.detail
    assert "apt-get install bubblewrap" in check.fix


def test_run_code_switched_off_in_config() -> None:
    settings = make_settings(sandbox={"enabled": False})
    assert "sandbox.enabled = false" in default_registry(settings).unavailable["run_code"]
    assert check_sandbox(settings).level is Level.WARN


async def test_the_tool_itself_refuses_without_a_sandbox(make_services: Any) -> None:
    settings = make_settings(sandbox={"bwrap": "/nonexistent/bwrap", "shell": False})
    svc = make_services(settings, ScriptedModel([]), start=False)
    ctx = ToolContext(svc, AgentState(spec=AgentSpec(name="a"), run_id="run_x"))
    with pytest.raises(ToolRetry, match="bash is switched off"):
        await run_code.fn(ctx, code="ls", language="bash")
    with pytest.raises(ToolRetry, match="code cannot run here: bubblewrap not found"):
        await run_code.fn(ctx, code="print(1)")


INTERP = Interpreter("/work/app/.venv/bin/python", ("/work/app/.venv", "/opt/py/3.11"))
TOOLS = Tools("/usr/bin/bwrap", "/usr/bin/prlimit", "/usr/bin/setpriv")


def _command(uid: int | None) -> list[str]:
    settings = SandboxSettings(cpu_s=3, memory_mb=128, processes=8, file_mb=2)
    return bwrap_command(
        TOOLS, settings, INTERP, host_workdir="/h/w", host_code_dir="/h/c", argv=["x"], uid=uid
    )


def test_the_workspace_mount_hides_none_of_the_interpreters_folders() -> None:
    assert workdir_for(INTERP) == "/workspace"
    assert workdir_for(Interpreter("/usr/bin/python3", ("/usr",))) == "/work"
    cmd = " ".join(_command(None))
    assert "--bind /h/w /workspace" in cmd and "--chdir /workspace" in cmd
    assert "--ro-bind /opt/py/3.11 /opt/py/3.11" in cmd and "--ro-bind /h/c /code" in cmd


def test_root_drops_to_a_user_of_its_own_before_the_limits() -> None:
    as_user = _command(None)
    assert "--unshare-all" in as_user and "/usr/bin/setpriv" not in as_user
    as_root = " ".join(_command(2_000_000_001))
    # No user namespace (it would map the sandbox to root), then no capabilities left.
    assert "--unshare-all" not in as_root and "--unshare-net" in as_root
    assert "--cap-drop ALL" in as_root
    drop = as_root.index("/usr/bin/setpriv --reuid=2000000001")
    limits = as_root.index("/usr/bin/prlimit --cpu=3:4 --as=134217728 --nproc=8")
    assert drop < limits < as_root.index("-- x")
    assert "--no-new-privs" in as_root and "--bounding-set=-all" in as_root


def test_the_capped_disk_and_the_seccomp_filter_are_on_the_command_line() -> None:
    settings = SandboxSettings()
    cmd = bwrap_command(
        TOOLS,
        settings,
        INTERP,
        host_workdir="/h/d/work",
        host_code_dir="/h/c",
        argv=["x"],
        uid=2_000_000_001,
        host_tmp="/h/d/tmp",
        seccomp_fd=7,
    )
    line = " ".join(cmd)
    # /tmp and /dev/shm on the call's tmpfs, not a tmpfs of bwrap's own (no file cap).
    assert "--bind /h/d/tmp /tmp" in line and "--bind /h/d/tmp/.shm /dev/shm" in line
    assert "--tmpfs /tmp" not in line
    # The filter is loaded by bwrap, so it binds setpriv, prlimit and the code.
    assert "--seccomp 7" in line and line.index("--seccomp 7") < line.index("/usr/bin/setpriv")


def test_the_seccomp_program_is_built() -> None:
    from core.tools.sandbox.seccomp import program

    bpf = program()
    # Classic BPF: 8-byte instructions; a few per refused call, then the final ALLOW.
    assert len(bpf) % 8 == 0 and len(bpf) // 8 > 40


def test_output_is_kept_within_its_bound_head_and_tail() -> None:
    out = Captured(100)
    out.feed(b"start " + b"." * 10_000)
    for _ in range(100):
        out.feed(b"x" * 65_536)
    out.feed(b" the end")
    text = out.text()
    assert text.startswith("start ") and text.endswith(" the end")
    assert out.total == 6 + 10_000 + 100 * 65_536 + 8 and f"{out.cut:,} bytes cut" in text
    assert len(text) < 160


def test_the_report_names_the_limit_in_plain_words() -> None:
    s = SandboxSettings(memory_mb=512, processes=32, output_chars=100)
    err = Captured(100)
    err.feed(b"Traceback...\nMemoryError\n")
    text = render(Outcome(1, Captured(100), err, 0.3), SyncReport(), s)
    assert text.startswith("Failed with exit status 1") and "ran out of memory (512 MB" in text
    timeout = render(Outcome(-9, Captured(100), Captured(100), 60.1, "timeout"), SyncReport(), s)
    assert timeout.startswith("Stopped after 60 s wall-clock limit")
    cpu = render(Outcome(152, Captured(100), Captured(100), 30.2), SyncReport(), s)
    assert "used up its CPU time (30 s limit)" in cpu


def test_the_report_says_which_disk_cap_and_a_noticeable_wait() -> None:
    s = SandboxSettings(disk_mb=100, max_files=1000, max_concurrent=4)
    quiet = Captured(100)
    short = render(Outcome(0, quiet, quiet, 0.1, waited=0.3), SyncReport(), s)
    assert "free sandbox" not in short and "disk is full" not in short
    full = render(Outcome(1, quiet, quiet, 0.1, full="bytes", waited=2.5), SyncReport(), s)
    assert "waited 2.5 s for a free sandbox first (at most 4 run at once" in full
    assert "at most 100 MB together (sandbox.disk_mb)" in full
    files = render(Outcome(1, quiet, quiet, 0.1, full="files"), SyncReport(), s)
    assert "at most 1000 files and folders together (sandbox.max_files)" in files
