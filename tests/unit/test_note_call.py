"""The stall detector's signature of a call: its arguments' JSON with the keys sorted, as
``json.dumps(json.loads(arguments), sort_keys=True)`` wrote it (signatures saved before
compare with new ones); text that is not JSON as it is."""

from __future__ import annotations

import json

import pytest

from core.agent.limits import note_call
from core.types.chat import ToolCall


@pytest.mark.parametrize(
    "arguments",
    [
        '{"b": 1, "a": [3, {"z": null, "y": 1.5e3}]}',
        '{"text": "é\\u00e9 \\ud83d\\ude00", "n": -0}',
        "  {}  ",
        "",
        "[1,2]",
        '"just text"',
        "NaN",
        "{not json",
        "\ufeff{}",
        '{"a": 1} trailing',
    ],
)
def test_a_calls_signature_is_its_sorted_json(arguments: str) -> None:
    try:
        expected = json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except json.JSONDecodeError:
        expected = arguments
    recent: list[str] = []
    note_call(recent, ToolCall(id="c", name="f", arguments=arguments), 3)
    assert recent == [f"f({expected})"]


def test_the_same_call_repeated_is_a_stall() -> None:
    recent: list[str] = []
    calls = [ToolCall(id=str(i), name="f", arguments='{"b": 1, "a": 2}') for i in range(3)]
    assert [note_call(recent, c, 3) for c in calls] == [False, False, True]
