"""run_code under the real bubblewrap: it works (data stack, plots, the run's files), and
it contains. Each containment test checks the host afterwards and that the call ended
with a clear sentence within small limits (about a second each)."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.agent.context import ToolContext
from core.config import PROJECT_ROOT
from core.llm.scripted import ScriptedModel
from core.process.doctor_sandbox import check_sandbox
from core.process.doctor_types import Level
from core.services import Services
from core.types.agent import AgentSpec, AgentState
from core.types.chat import ToolCall
from tests.conftest import make_settings

pytestmark = pytest.mark.integration

LIMITS = {
    "cpu_s": 1,
    "memory_mb": 256,
    "processes": 16,
    "file_mb": 5,
    "timeout_s": 2.0,
    "output_chars": 1000,
}


@pytest.fixture
async def svc(make_services: Any) -> AsyncIterator[Services]:
    """Small limits: each containment test ends in about a second."""
    yield _services(make_services, LIMITS)


@pytest.fixture
async def roomy(make_services: Any) -> AsyncIterator[Services]:
    """Room for real work (importing pandas and matplotlib takes a second or two)."""
    yield _services(make_services, {"cpu_s": 30, "timeout_s": 30.0})


def _services(make_services: Any, limits: dict[str, Any]) -> Services:
    services: Services = make_services(
        make_settings(sandbox=limits), ScriptedModel([]), start=False
    )
    assert "run_code" in services.tools, services.tools.unavailable.get("run_code")
    return services


class Analyst:
    """An agent of a fresh run calling run_code through the registry, as a turn does."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc
        state = AgentState(spec=AgentSpec(name="analyst", tools=("run_code",)), run_id=_run())
        self.ctx = ToolContext(svc, state)
        self.run_id = state.run_id

    async def run(self, code: str, language: str = "python") -> tuple[bool, str, float]:
        args = json.dumps({"code": code, "language": language})
        call = ToolCall(id=uuid.uuid4().hex, name="run_code", arguments=args)
        started = time.monotonic()
        result = await self.svc.tools.execute(
            self.ctx, call, ["run_code"], self.svc.prompts, max_chars=20_000
        )
        return result.ok, result.content, time.monotonic() - started

    async def files(self) -> dict[str, bytes]:
        ws = self.svc.workspace
        return {f.path: await ws.read(self.run_id, f.path) for f in await ws.files(self.run_id)}


def _run() -> str:
    return f"run_{uuid.uuid4().hex[:10]}"


# --- it works --------------------------------------------------------------------------


def test_doctor_finds_the_sandbox_working() -> None:
    check = check_sandbox(make_settings())
    assert check.level is Level.OK and "bubblewrap" in check.detail, check


async def test_a_trivial_script(svc: Services) -> None:
    ok, text, took = await Analyst(svc).run("print(1 + 1)")
    assert ok and text.startswith("Finished (exit status 0)") and "stdout:\n2" in text
    assert took < 2


async def test_pandas_and_a_matplotlib_chart_land_in_the_workspace(roomy: Services) -> None:
    me = Analyst(roomy)
    await roomy.workspace.write(me.run_id, "data/sales.csv", b"month,sales\n1,10\n2,30\n3,20\n")
    code = (
        "import pandas as pd, matplotlib.pyplot as plt\n"
        "df = pd.read_csv('data/sales.csv')\n"
        "print('total', df.sales.sum())\n"
        "df.plot(x='month', y='sales')\n"
        "import os; os.makedirs('outputs', exist_ok=True)\n"
        "plt.savefig('outputs/chart.png')\n"
    )
    ok, text, _ = await me.run(code)
    assert ok and "total 60" in text, text
    assert "Files created or changed: outputs/chart.png" in text
    files = await me.files()
    assert files["outputs/chart.png"].startswith(b"\x89PNG\r\n\x1a\n")
    assert files["data/sales.csv"].startswith(b"month,sales")  # unchanged, kept


async def test_files_read_changed_and_deleted_come_back(svc: Services) -> None:
    me = Analyst(svc)
    await svc.workspace.write(me.run_id, "notes.txt", b"first line\n")
    await svc.workspace.write(me.run_id, "old.csv", b"a\n")
    script = "cat notes.txt; echo second line >> notes.txt; rm old.csv; echo hi > new.txt"
    ok, text, _ = await me.run(script, "bash")
    assert ok and "first line" in text and "Files deleted: old.csv" in text, text
    assert await me.files() == {"new.txt": b"hi\n", "notes.txt": b"first line\nsecond line\n"}


# --- it contains -------------------------------------------------------------------------


async def test_host_files_and_other_runs_are_invisible(svc: Services) -> None:
    other = Analyst(svc)
    await svc.workspace.write(other.run_id, "secret.txt", b"another run's")
    me = Analyst(svc)
    await svc.workspace.write(me.run_id, "mine.txt", b"mine")
    project_file = PROJECT_ROOT / "pyproject.toml"
    code = (
        "import os\n"
        "print('cwd', sorted(os.listdir('.')))\n"
        "print('root home', sorted(os.listdir('/root')) if os.path.isdir('/root') else None)\n"
        f"for p in ['/etc/shadow', '/etc/passwd', {str(project_file)!r}, "
        f"{str(Path.home() / '.bashrc')!r}]:\n"
        "    try:\n"
        "        open(p).read(); print('READ', p)\n"
        "    except OSError as e:\n"
        "        print('refused', p, type(e).__name__)\n"
    )
    ok, text, _ = await me.run(code)
    assert ok and "cwd ['mine.txt']" in text, text
    assert "READ" not in text and text.count("refused") == 4
    assert ".bashrc" not in text.split("root home", 1)[1].split("\n", 1)[0]


async def test_writes_outside_the_workspace_do_not_reach_the_host(svc: Services) -> None:
    marker = f"caramba-escape-{uuid.uuid4().hex}"
    code = (
        f"open('/tmp/{marker}', 'w').write('x'); print('tmp written inside')\n"
        "import os\n"
        f"for p in ['/usr/{marker}', '/etc/{marker}', '/{marker}']:\n"
        "    try:\n"
        "        open(p, 'w').write('x'); print('WROTE', p)\n"
        "    except OSError as e:\n"
        "        print('refused', p, e.strerror)\n"
    )
    ok, text, _ = await Analyst(svc).run(code)
    assert ok and "tmp written inside" in text and "WROTE" not in text, text
    assert _host_paths_existing(marker) == []


def _host_paths_existing(marker: str) -> list[str]:
    paths = (f"/tmp/{marker}", f"/usr/{marker}", f"/etc/{marker}", f"/{marker}")
    return [p for p in paths if os.path.exists(p)]


async def test_links_to_host_files_are_not_followed_back(svc: Services) -> None:
    me = Analyst(svc)
    code = "import os; os.symlink('/etc/shadow', 'leak.txt'); os.symlink('/root', 'home')"
    ok, text, _ = await me.run(code)
    assert ok and "leak.txt: a link, not kept" in text, text
    assert await me.files() == {}


async def test_no_network_not_even_the_hosts_redis(svc: Services, real_redis: Any) -> None:
    assert await real_redis.ping()  # the host reaches it
    code = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', 6379), timeout=1); print('CONNECTED')\n"
        "except OSError as e:\n"
        "    print('no connection:', type(e).__name__)\n"
        "print([i for i in socket.if_nameindex()])\n"
    )
    ok, text, took = await Analyst(svc).run(code)
    assert ok and "no connection: ConnectionRefusedError" in text and "CONNECTED" not in text
    assert "eth" not in text and took < 2, text


def _host_processes_with(token: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("language", ["python", "bash"])
async def test_a_fork_bomb_hits_the_process_limit(svc: Services, language: str) -> None:
    token = f"3{uuid.uuid4().int % 10**8}"  # sleep's argument: findable among processes
    if language == "python":
        code = (
            "import os\n"
            "while True:\n"
            "    if os.fork() == 0:\n"
            f"        os.execv('/bin/sleep', ['sleep', '{token}'])\n"
        )
    else:
        code = f"bomb() {{ sleep {token} & bomb | bomb & }}; bomb; wait"
    ok, text, took = await Analyst(svc).run(code, language)
    assert ok and took < 4, text
    assert "Too many processes" in text or "wall-clock limit" in text, text
    assert _host_processes_with(token) == []  # nothing it started lives on


async def test_a_memory_bomb_runs_out_of_memory(svc: Services) -> None:
    ok, text, took = await Analyst(svc).run("x = []\nwhile True: x.append(bytearray(10**7))")
    assert ok and "ran out of memory (256 MB limit)" in text and took < 3, text


async def test_an_endless_loop_hits_the_cpu_limit(make_services: Any) -> None:
    # CPU seconds, not wall-clock: on a busy machine one CPU second takes longer.
    svc = _services(make_services, {**LIMITS, "timeout_s": 15.0})
    ok, text, took = await Analyst(svc).run("while True: pass")
    assert ok and "used up its CPU time (1 s limit)" in text and took < 15, text


async def test_a_sleeper_hits_the_wall_clock_limit(svc: Services) -> None:
    token = f"4{uuid.uuid4().int % 10**8}"
    ok, text, took = await Analyst(svc).run(f"sleep {token}", "bash")
    assert ok and "Stopped after 2 s wall-clock limit" in text and took < 4, text
    assert _host_processes_with(token) == []


async def test_an_output_flood_is_cut_and_stopped(svc: Services) -> None:
    ok, text, took = await Analyst(svc).run("while True: print('y' * 1000)")
    assert ok and "output flood" in text and "Output cut at 1,000 characters" in text
    assert len(text) < 2500 and took < 3, text


async def test_a_file_past_the_size_limit_is_refused(svc: Services) -> None:
    ok, text, _ = await Analyst(svc).run("open('big.bin', 'wb').write(b'x' * 6 * 2**20)")
    assert ok and "A file reached the 5 MB size limit" in text, text


async def test_a_flood_of_files_is_not_taken_in(make_services: Any) -> None:
    services: Services = make_services(
        make_settings(sandbox=LIMITS, workspace={"max_files": 5}), ScriptedModel([]), start=False
    )
    me = Analyst(services)
    code = "for i in range(2000): open(f'f{i:04}.txt', 'w').write('x')"
    ok, text, took = await me.run(code)
    assert ok and "too many files (a workspace holds at most 5)" in text and took < 4, text
    assert len(await me.files()) == 5


async def test_a_cancelled_call_leaves_nothing_running(svc: Services) -> None:
    token = f"5{uuid.uuid4().int % 10**8}"
    task = asyncio.create_task(Analyst(svc).run(f"sleep {token}", "bash"))
    for _ in range(50):
        await asyncio.sleep(0.05)
        if _host_processes_with(token):
            break
    assert _host_processes_with(token), "the sandbox did not start"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    assert _host_processes_with(token) == []
