"""An OpenAI-compatible fake of real models' habits: it plays a whole Caramba flow (router,
planner, prompt creator, agents) as an obedient model would, shaped by one habit, without
a per-test script.

Which role asks is read from the request: the tools offered (``submit_router``,
``submit_planner``, ``finish``) or, when a model gets no tools, marker words of the
prompts (core/prompts/planning/, roles/, bus/tools_in_text.j2). The obedient answers:

* router: "direct" (with the answer) for a short question it knows, else "plan";
* planner: one orchestrator, "Answerer", with ``calculate``;
* prompt creator: a short prompt; a critique says LGTM;
* an agent: ``calculate`` first when the task holds a sum like ``6*7``, then ``finish``
  with the answer (known answers in :data:`ANSWERS`, else a line about the task).

Habits (``--habit``):

* ``obedient``: as above, tool calls the OpenAI way;
* ``text``: never calls a tool; says its answer in plain prose, no JSON;
* ``json_prose``: writes its calls (or the router's / planner's object) as JSON inside
  prose and a ```json fence instead of calling;
* ``wrong_types``: numbers as strings, numbers for strings, arguments as a JSON string of
  a JSON string;
* ``reasoning``: ``<think>…</think>`` before every answer;
* ``empty``: the first answer of each conversation is empty;
* ``slow``: its first answer comes after ``--delay`` seconds;
* ``silent`` (no model worth using): every answer is empty.

A model named after a habit (``openai/obedient``, ``openai/text``…) has that habit, any
other name the server's. Run it: ``python -m tests.fakes.unruly_llm --habit text --port
8997``, then point caramba at ``http://127.0.0.1:8997/v1`` with the model ``openai/unruly``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

from tests.fakes.llm_server import FakeItem, FakeRaw, FakeReply, ThreadedFakeLLMServer
from tests.fakes.llm_server import _completion_body as completion_body

HABITS = ("obedient", "text", "json_prose", "wrong_types", "reasoning", "empty", "slow")
# Beyond what models do and Caramba copes with: ``silent`` never says anything.
ALL_HABITS = (*HABITS, "silent")
ANSWERS = {"capital of france": "The capital of France is Paris.", "2+2": "2 + 2 = 4."}
_SUM = re.compile(r"(\d+)\s*([-+*/x×])\s*(\d+)")
Call = tuple[str, dict[str, Any]]


def _texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    messages = body.get("messages") or ()
    return [
        (str(m.get("role")), c if isinstance(c := m.get("content"), str) else "") for m in messages
    ]


def _offered(body: dict[str, Any]) -> set[str]:
    return {str(t.get("function", {}).get("name")) for t in body.get("tools") or ()}


def role_of(body: dict[str, Any]) -> str:
    """router | planner | critic | prompt | agent | other, from tools and marker words."""
    tools = _offered(body)
    first = " ".join(text for role, text in _texts(body)[:2])
    if "submit_router" in tools or "You route requests" in first:
        return "router"
    if "submit_planner" in tools or "master planner" in first:
        return "planner"
    if "You review system prompts" in first or "Critique the draft" in first:
        return "critic"
    if "You write system prompts" in first:
        return "prompt"
    if "finish" in tools or "`finish`" in first:
        return "agent"
    return "other"


def _task(body: dict[str, Any]) -> str:
    texts = _texts(body)
    for _role, text in texts:
        for marker in ("The request:\n\n", "carry out this task:\n\n"):
            if marker in text:
                return text.split(marker, 1)[1].split("\n\n", 1)[0].strip()
    user = next((t for r, t in texts if r == "user"), "")
    return user.strip()


def answer_to(task: str, result: str | None = None) -> str:
    low = task.lower().replace(" ", "")
    for key, text in ANSWERS.items():
        if key.replace(" ", "") in low:
            return text
    if result:
        return f"{result}, so the answer is {result.rsplit('=', 1)[-1].strip()}."
    return f"Here is my answer to “{task[:80]}”: done."


def _sum(task: str) -> str | None:
    found = _SUM.search(task)
    if found is None:
        return None
    a, op, b = found.groups()
    return f"{a}{'*' if op in 'x×' else op}{b}"


def _worked(expression: str) -> str:
    """``6*7 = 42``: what a model that cannot call the calculator works out itself."""
    a, op, b = _SUM.fullmatch(expression).groups()  # type: ignore[union-attr]
    x, y = int(a), int(b)
    value = {"+": x + y, "-": x - y, "*": x * y, "/": x / y if y else float("nan")}[op]
    return f"{expression} = {value:g}"


def _history(body: dict[str, Any]) -> tuple[bool, str | None]:
    """Has the agent called calculate yet, and the result it got (if any)."""
    called, result = False, None
    for m in body.get("messages") or ():
        content = m.get("content") if isinstance(m.get("content"), str) else ""
        if any(c["function"]["name"] == "calculate" for c in m.get("tool_calls") or ()):
            called = True
        if m.get("role") == "assistant" and '"calculate"' in content:
            called = True
        if m.get("role") == "tool" and m.get("name") == "calculate":
            result = content
        if m.get("role") == "user" and content.startswith("Result of the tool calculate"):
            result = content.split("\n", 1)[-1]
    return called, result


class Answer:
    """What an obedient model says: tool calls or text, plus what a text-only model
    would say instead (``prose``)."""

    def __init__(self, prose: str, *, calls: Sequence[Call] = (), text: str | None = None) -> None:
        self.prose, self.calls, self.text = prose, list(calls), text


def obedient(body: dict[str, Any]) -> Answer:
    role, task, tools = role_of(body), _task(body), _offered(body)
    if role == "router":
        known = any(k.replace(" ", "") in task.lower().replace(" ", "") for k in ANSWERS)
        decision = {
            "path": "direct" if known else "plan",
            "reason": "a simple question" if known else "it takes a few steps",
            "answer": answer_to(task) if known else None,
        }
        prose = (
            f"This is a simple question; I would answer it directly: {answer_to(task)}"
            if known
            else "This needs a few steps, so it should be planned before anyone works on it."
        )
        return _submit("submit_router", decision, tools, prose)
    if role == "planner":
        design = {
            "steps": [{"title": "Work it out", "detail": "Answer the request", "tools": []}],
            "agents": [
                {
                    "name": "Answerer",
                    "role": "orchestrator",
                    "parent": None,
                    "description": "Works out the answer and hands it back.",
                    "tools": ["calculate"],
                    "max_tokens": 50000,
                }
            ],
            "teams": [],
            "budget_usd": 0.5,
            "rationale": "one agent is enough",
        }
        prose = "One agent, the Answerer, can work this out with a calculator and hand it back."
        return _submit("submit_planner", design, tools, prose)
    if role == "critic":
        return Answer("LGTM", text="LGTM")
    if role == "prompt":
        text = "Work out what was asked, check it, and finish with a short, complete answer."
        return Answer(text, text=text)
    if role == "agent":
        called, result = _history(body)
        expression = _sum(task)
        if expression and not called:
            prose = answer_to(task, _worked(expression))
            return Answer(prose, calls=[("calculate", {"expression": expression})])
        final = answer_to(task, result)
        return Answer(final, calls=[("finish", {"result": final})])
    return Answer("ok", text="ok")


def _submit(tool: str, payload: dict[str, Any], offered: set[str], prose: str) -> Answer:
    if tool in offered:
        return Answer(prose, calls=[(tool, payload)])
    return Answer(prose, text=json.dumps(payload))


def _stringly(value: Any) -> Any:
    """Numbers as strings, all the way down."""
    if isinstance(value, dict):
        return {k: _stringly(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringly(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def shape(habit: str, role: str, answer: Answer, first: bool) -> FakeReply:
    """The obedient ``answer`` as a model with ``habit`` gives it (``first``: the first
    answer of its conversation)."""
    if habit == "silent" or (habit == "empty" and first):
        return FakeReply(content="")
    if habit == "text":
        return FakeReply(content=answer.prose)
    if answer.text is not None:
        think = "<think>\nThe user wants a short text. I will write it.\n</think>\n\n"
        if habit == "json_prose" and role in ("router", "planner"):
            return FakeReply(content=f"Here is my answer:\n```json\n{answer.text}\n```\nDone.")
        return FakeReply(content=(think if habit == "reasoning" else "") + answer.text)
    if habit == "json_prose":
        if role in ("router", "planner"):
            payload = json.dumps(answer.calls[0][1], indent=2)
            return FakeReply(content=f"Sure! Here is what I decided:\n```json\n{payload}\n```")
        written = [{"tool": name, "arguments": args} for name, args in answer.calls]
        block = json.dumps(written[0] if len(written) == 1 else written, indent=2)
        return FakeReply(content=f"I will do that now.\n\n```json\n{block}\n```\n\nThanks!")
    if habit == "wrong_types":
        calls: list[tuple[str, dict[str, Any] | str]] = []
        for name, args in answer.calls:
            if name == "finish":
                calls.append((name, json.dumps(json.dumps(args))))  # a JSON string of a string
            elif name == "calculate":
                calls.append((name, {"expression": 42}))  # a number for a string
            else:
                calls.append((name, _stringly(args)))
        return FakeReply(tool_calls=calls)
    content = None
    if habit == "reasoning":
        content = "<think>\nLet me think about which tool to call.\n</think>\n"
    return FakeReply(content=content, tool_calls=list(answer.calls))


class UnrulyModel:
    """The responder: one habit, the conversations seen, the first answer's delay."""

    def __init__(self, habit: str, delay_s: float = 3.0) -> None:
        if habit not in ALL_HABITS:
            raise ValueError(f"unknown habit {habit!r} (one of {', '.join(ALL_HABITS)})")
        self.habit, self.delay_s = habit, delay_s
        self._seen: set[str] = set()
        self._answered: dict[str, int] = {}
        self._lock = threading.Lock()

    def _first(self, body: dict[str, Any]) -> bool:
        head = json.dumps(_texts(body)[:2])
        key = hashlib.blake2b(head.encode(), digest_size=12).hexdigest()
        with self._lock:
            first = key not in self._seen
            self._seen.add(key)
            return first

    def __call__(self, body: dict[str, Any]) -> FakeItem:
        named = str(body.get("model") or "").rsplit("/", 1)[-1]
        habit = named if named in ALL_HABITS else self.habit
        reply = shape(habit, role_of(body), obedient(body), self._first(body))
        with self._lock:
            self._answered[habit] = self._answered.get(habit, 0) + 1
            slow = habit == "slow" and self._answered[habit] == 1
        if not slow:
            return reply
        model = str(body.get("model") or "unruly")
        payload = json.dumps(completion_body(reply, model, body))
        return FakeRaw(payload, 200, "application/json", delay_s=self.delay_s)


def serve(habit: str, port: int = 0, delay_s: float = 3.0) -> ThreadedFakeLLMServer:
    """A started server answering with ``habit`` (stop it, or use it in ``with``)."""
    server = ThreadedFakeLLMServer(port=port, models=("unruly",))
    server.set_responder(UnrulyModel(habit, delay_s))
    server.start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description="an OpenAI-compatible model with one habit")
    parser.add_argument("--habit", choices=ALL_HABITS, default="obedient")
    parser.add_argument("--port", type=int, default=8997)
    parser.add_argument("--delay", type=float, default=3.0, help="slow: first answer's delay")
    args = parser.parse_args()
    server = serve(args.habit, args.port, args.delay)
    print(f"unruly model ({args.habit}) serving on {server.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
