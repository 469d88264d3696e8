"""Turn schedulers: inline asyncio (embedded mode, tests) and Celery (``tasks/``)."""

from core.scheduler.base import Scheduler, TurnHandler, TurnJob

__all__ = ["Scheduler", "TurnHandler", "TurnJob"]
