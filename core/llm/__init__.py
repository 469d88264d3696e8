"""The LLM gateway: litellm for real providers, a scripted model for tests and the demo."""

from core.llm.base import LLM, LLMRequest, LLMResponse

__all__ = ["LLM", "LLMRequest", "LLMResponse"]
