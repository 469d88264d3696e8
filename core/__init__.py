"""Caramba's domain: types, config, prompts, the LLM gateway, tools and the agent turn.

Dependencies point inward: chat adapters (``bots``) and the Celery scheduler (``tasks``)
import ``core``; ``core`` never imports them, nor any chat SDK or Celery.
"""
