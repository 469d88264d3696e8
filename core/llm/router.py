"""The model port of every process (``wiring.build_llm``): OpenAI-compatible models
(``openai/…``, ``hosted_vllm/…``, or any model when ``llm.api_base`` is set) go to the direct
client, every other model — and any with ``llm.client = "litellm"`` or listed in
``llm.litellm_models`` — to litellm, which is imported only when such a model is first called
(see :mod:`core.llm.routes`).

Owns the choice per model; calls core.llm's clients.
"""

from __future__ import annotations

from collections.abc import Callable

from core.config import LLMSettings
from core.llm.base import LLM, LLMRequest, LLMResponse
from core.llm.openai_compat import OpenAICompatClient
from core.llm.routes import is_direct


def _litellm(settings: LLMSettings) -> LLM:
    from core.llm.gateway import LiteLLMGateway

    return LiteLLMGateway(settings)


class RoutedLLM:
    """:class:`core.llm.base.LLM` holding the direct client and (lazily) the litellm gateway."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        direct: LLM | None = None,
        make_litellm: Callable[[LLMSettings], LLM] = _litellm,
    ) -> None:
        self.settings = settings
        self.direct = direct if direct is not None else OpenAICompatClient(settings)
        self._make_litellm = make_litellm
        self.litellm: LLM | None = None

    def for_model(self, model: str) -> LLM:
        if is_direct(self.settings, model):
            return self.direct
        if self.litellm is None:
            self.litellm = self._make_litellm(self.settings)
        return self.litellm

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return await self.for_model(request.model).complete(request)

    async def aclose(self) -> None:
        await self.direct.aclose()
        if self.litellm is not None:
            await self.litellm.aclose()
