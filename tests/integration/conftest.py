"""Fixtures shared by the tests that run real worker processes (``test_worker_crash*``):
the OpenAI-compatible fake the workers call, and the Redis key prefix they and the test's
client share — one of each per test module. A module that needs another fake (a
latency, a responder set from the start) or prefix defines its own, which wins."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.llm_server import ThreadedFakeLLMServer
from tests.integration.processes import unique_prefix


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[ThreadedFakeLLMServer]:
    with ThreadedFakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def prefix() -> Iterator[str]:
    with unique_prefix() as name:
        yield name
