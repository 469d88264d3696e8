"""One ``run_code`` call end to end: the run's files into a private folder, the code run
in the sandbox against them, the changes back into the workspace, the folder removed."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Literal

from core.config_tools import SandboxSettings
from core.tools.sandbox.layout import CODE_DIR, bwrap_command, sandbox_uid
from core.tools.sandbox.probe import Probe
from core.tools.sandbox.report import flood_bytes, render
from core.tools.sandbox.runner import DiskCap, execute
from core.tools.sandbox.sync import materialise, remove_tree, sync_back
from core.workspace.base import Workspace

Language = Literal["python", "bash"]
_SCRIPT = {"python": "main.py", "bash": "main.sh"}


async def run_code_in_sandbox(
    settings: SandboxSettings,
    ready: Probe,
    workspace: Workspace,
    run_id: str,
    code: str,
    language: Language = "python",
) -> str:
    """Run ``code`` against the run's files; the model's report of what happened."""
    if not ready.ok or ready.tools is None or ready.interpreter is None:
        raise RuntimeError(f"the sandbox is unavailable: {ready.detail}")
    tmp = Path(tempfile.mkdtemp(prefix="caramba-sandbox-"))
    try:
        work, code_dir = tmp / "work", tmp / "code"
        work.mkdir()
        code_dir.mkdir()
        code_dir.chmod(0o755)  # read by the sandbox's own user
        script = code_dir / _SCRIPT[language]
        script.write_text(code, encoding="utf-8")
        script.chmod(0o644)
        uid = sandbox_uid() if os.geteuid() == 0 else None
        before = await materialise(workspace, run_id, work, uid)
        if language == "python":
            argv = ready.interpreter.argv(f"{CODE_DIR}/{script.name}")
        else:
            argv = ["bash", "--noprofile", "--norc", f"{CODE_DIR}/{script.name}"]
        cmd = bwrap_command(
            ready.tools,
            settings,
            ready.interpreter,
            host_workdir=str(work),
            host_code_dir=str(code_dir),
            argv=argv,
            uid=uid,
        )
        caps = workspace.caps
        outcome = await execute(
            cmd,
            timeout_s=settings.timeout_s,
            output_bytes=settings.output_chars,
            flood_bytes=flood_bytes(settings),
            # Room for scratch files beyond what the workspace keeps, but not a full disk.
            disk=DiskCap(work, 2 * caps.max_run_bytes, 2 * caps.max_files + 50),
        )
        synced = await sync_back(workspace, run_id, work, before)
        return render(outcome, synced, settings)
    finally:
        await asyncio.to_thread(remove_tree, tmp)
