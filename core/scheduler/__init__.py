"""Turn schedulers: inline asyncio (embedded mode, tests) and Celery (``tasks/``)."""

from core.scheduler.base import Scheduler, TurnHandler, TurnJob
from core.scheduler.recording import RecordingScheduler

__all__ = ["RecordingScheduler", "Scheduler", "TurnHandler", "TurnJob"]
