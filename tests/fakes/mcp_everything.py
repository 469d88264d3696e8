"""``@modelcontextprotocol/server-everything``, the MCP reference server (nobody on the team
wrote it), installed from the npm registry at a pinned version into ``.mcp-servers/``
(git-ignored). ``.ci/run`` installs it before the tests; :func:`everything_command`
installs it on first use when it is missing (a test run by hand), and fails loudly if npm
cannot: the tests that need it never skip."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

VERSION = "2026.8.31"
PACKAGE = f"@modelcontextprotocol/server-everything@{VERSION}"
FOLDER = Path(__file__).resolve().parents[2] / ".mcp-servers"
BINARY = FOLDER / "node_modules" / ".bin" / "mcp-server-everything"
_LOCK = threading.Lock()


def _installed() -> bool:
    package = FOLDER / "node_modules" / "@modelcontextprotocol" / "server-everything"
    manifest = package / "package.json"
    if not (BINARY.exists() and manifest.exists()):
        return False
    return f'"version": "{VERSION}"' in manifest.read_text()


def everything_command() -> list[str]:
    """The command starting server-everything over stdio (installing it first if needed);
    ``RuntimeError`` with npm's words if it cannot be installed."""
    with _LOCK:
        if not _installed():
            npm = shutil.which("npm")
            if npm is None:
                raise RuntimeError("npm is not installed: it is needed to install " + PACKAGE)
            FOLDER.mkdir(exist_ok=True)
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(FOLDER), PACKAGE],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0 or not _installed():
                raise RuntimeError(f"npm could not install {PACKAGE}:\n{done.stderr[-3000:]}")
    return [str(BINARY), "stdio"]
