"""What production mode asks of a process before anything starts: a Redis shared by every
process, and one log format for the worker processes and the ``caramba worker``
supervisor. Standard library and settings only: the supervisor, which only starts and
watches processes, checks and logs with this and never imports Celery."""

from __future__ import annotations

import logging

from core.config import Settings
from core.errors import ConfigError

LOG_FORMAT = "%(asctime)s %(levelname)s %(processName)s[%(process)d] %(name)s: %(message)s"


def require_redis(settings: Settings) -> None:
    """Production mode needs a real Redis: workers in other processes must share state."""
    if settings.redis.embedded:
        raise ConfigError(
            "Celery workers need a Redis server shared by every process, "
            "but redis.url is empty (embedded mode)",
            hint="set CARAMBA_REDIS__URL=redis://127.0.0.1:6379/0 (or [redis] url in "
            "config.toml), or use `caramba run` for embedded mode",
        )


def configure_logging(loglevel: str) -> None:
    logging.basicConfig(level=loglevel.upper(), format=LOG_FORMAT, force=True)
    # One line per HTTP call to the model is noise at INFO.
    for noisy in ("httpx", "LiteLLM", "litellm"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
