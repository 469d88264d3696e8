"""Log lines kept out of the terminal while ``caramba run`` shows a run.

Warnings written to stderr (litellm's own logger has a handler of its own, and core logs
a model it has no price for) break up the spinner and the run's lines. In the console
every log record goes to a file instead, and the person is told at the end how many
warnings it holds and where.
"""

from __future__ import annotations

import logging
from pathlib import Path

# litellm's loggers, each with a stderr handler of its own (litellm/_logging.py).
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


class FileLogs:
    """Every log record (and Python warning) of this process into ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._counter = _Count()
        self._file: logging.Handler | None = None
        self._before: list[logging.Handler] = []

    def start(self) -> FileLogs:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = logging.FileHandler(self.path, encoding="utf-8")
        self._file.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        )
        root = logging.getLogger()
        self._before = root.handlers[:]
        for old in self._before:
            root.removeHandler(old)
        root.addHandler(self._file)
        root.addHandler(self._counter)
        logging.captureWarnings(True)
        # What MCP servers write to their stderr (core.tools.mcp.stderr) is kept here too.
        logging.getLogger("core.tools.mcp.server").setLevel(logging.INFO)
        self.quiet_litellm()
        return self

    def stop(self) -> None:
        """Log where this process logged before."""
        root = logging.getLogger()
        for mine in (self._file, self._counter):
            if mine is not None:
                root.removeHandler(mine)
                mine.close()
        for old in self._before:
            root.addHandler(old)
        logging.captureWarnings(False)

    def quiet_litellm(self) -> None:
        """Take litellm's own stderr handlers away (call again once litellm is imported:
        it adds them when it loads); its records reach the file through the root."""
        for name in LITELLM_LOGGERS:
            logger = logging.getLogger(name)
            for old in logger.handlers[:]:
                logger.removeHandler(old)
            logger.propagate = True

    @property
    def warnings(self) -> int:
        """Warnings and errors logged so far."""
        return self._counter.count
