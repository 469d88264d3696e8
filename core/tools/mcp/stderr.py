"""A stdio MCP server's error output, line by line, into this process's log (logger
``core.tools.mcp.server``), never onto the console among a run's lines.

The SDK hands the child process a file for its stderr; here that file is the write end
of a pipe whose read end a daemon thread drains. One pipe per configured server, kept
across reconnections, closed with the connection.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from typing import TextIO

# At INFO: a worker's log shows them at its usual level; the console's log file keeps
# them (bots.console.logs); `caramba doctor` shows a failed server's last lines.
log = logging.getLogger("core.tools.mcp.server")
_LINE_CHARS = 2000  # a line longer than this is cut in the log


class ServerLog:
    """The pipe a stdio server's stderr goes into, and the thread logging it."""

    def __init__(self, server: str) -> None:
        self.server = server
        # Its last lines, for ``caramba doctor`` to show when the server does not start.
        self.tail: deque[str] = deque(maxlen=5)
        read_fd, write_fd = os.pipe()
        self.file: TextIO = os.fdopen(write_fd, "w")
        self._reader = threading.Thread(
            target=self._drain, args=(read_fd,), name=f"mcp-stderr-{server}", daemon=True
        )
        self._reader.start()

    def _drain(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace").rstrip()
                if line:
                    self.tail.append(line[:_LINE_CHARS])
                    log.info("MCP server %r: %s", self.server, line[:_LINE_CHARS])

    def close(self) -> None:
        """Close our write end: the thread ends once the server's process has exited."""
        try:
            self.file.close()
        except OSError:
            pass
