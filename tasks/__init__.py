"""Celery app and tasks: the distributed scheduler of agent turns (production mode).

It implements ``core.scheduler.base.Scheduler`` and drives ``core.process.jobs.handle``;
``core`` never imports this package.
"""
