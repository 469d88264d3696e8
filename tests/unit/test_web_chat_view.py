"""The web chat's thread as a person reads it (bots/web/chat_view.py): who says what,
the task once, stale lines left out, a question waiting only until answered, statuses
in words, every file offered once."""

from __future__ import annotations

from bots.web.chat_transport import ChatMessage
from bots.web.chat_view import status_words, thread_view
from core.types.run import RunState, RunStatus
from core.workspace import FileInfo


def msg(i: int, kind: str, text: str = "", **payload: object) -> ChatMessage:
    return ChatMessage(f"m{i}", text, {"kind": kind, **payload}, 1000.0 + i)


def run(status: RunStatus, **over: object) -> RunState:
    return RunState(id="run_1", task="Budget our offsite", status=status, **over)


def test_the_task_is_your_first_message_and_each_message_names_who_said_it() -> None:
    messages = [
        msg(1, "card", "Here is my proposal"),
        msg(2, "milestone", "Trains: €1068", agent="Trains", reason="finished"),
        msg(3, "you", "Porto"),
        msg(4, "result", "**Total**"),
    ]
    shown = thread_view(run(RunStatus.COMPLETED), messages, []).bubbles
    assert [(b.who, b.side) for b in shown] == [
        ("You", "you"),
        ("Caramba", "caramba"),
        ("Trains", "agent"),
        ("You", "you"),
        ("Caramba", "caramba"),
    ]
    assert shown[0].text == "Budget our offsite"
    assert shown[2].at == 1002.0


def test_a_saved_edit_is_left_out_once_the_proposal_is_decided() -> None:
    saved = msg(1, "note", "Saved: … Approve to start.", level="info", **{"while": "proposed"})
    other = msg(2, "note", "Thanks for rating.", level="info")
    proposed = thread_view(run(RunStatus.PROPOSED), [saved, other], []).bubbles
    assert [b.text for b in proposed[1:]] == ["Saved: … Approve to start.", "Thanks for rating."]
    ended = thread_view(run(RunStatus.COMPLETED), [saved, other], []).bubbles
    assert [b.text for b in ended[1:]] == ["Thanks for rating."]


def test_a_question_waits_until_answered_and_the_status_line_says_so() -> None:
    status = msg(1, "status", "Starting the agents…", phase="starting")
    question = msg(2, "question", "Lisbon or Porto?", agent="Orchestrator")
    thread = thread_view(run(RunStatus.WAITING_HUMAN), [status, question], [])
    waiting = thread.bubbles
    assert waiting[2].open and thread.asking
    assert waiting[1].text == "Waiting for your answer to Orchestrator's question."
    answered = [status, question, msg(3, "you", "Porto")]
    after = thread_view(run(RunStatus.RUNNING), answered, []).bubbles
    assert not after[2].open and after[1].text == "Starting the agents…"
    # Answered, and the run waits for something else: the old question does not wait.
    again = thread_view(run(RunStatus.WAITING_HUMAN), answered, []).bubbles
    assert not again[2].open


def test_a_budget_pause_keeps_its_own_status_line() -> None:
    status = msg(1, "status", "the run paused at the budget", phase="running")
    question = msg(2, "question", "Lisbon or Porto?", agent="Orchestrator")
    paused = run(RunStatus.WAITING_HUMAN, paused="tokens")
    shown = thread_view(paused, [status, question], []).bubbles
    assert shown[1].text == "the run paused at the budget"


def test_every_file_is_offered_once_in_the_threads_own_list() -> None:
    relayed = msg(1, "files", "1 file", files=[{"path": "outputs/a.md"}])
    files = [
        FileInfo(path="outputs/a.md", size=3, mime="text/markdown", updated_at=1.0),
        FileInfo(path="budget.md", size=174, mime="text/markdown", updated_at=2.0),
    ]
    thread = thread_view(run(RunStatus.COMPLETED), [relayed], files)
    assert [b.kind for b in thread.bubbles] == ["you"]
    assert [f.path for f in thread.files] == ["budget.md", "outputs/a.md"]


def test_statuses_in_words() -> None:
    assert status_words(RunStatus.WAITING_HUMAN) == "waiting for you"
    assert status_words(RunStatus.PROPOSED) == "waiting for your approval"
    assert status_words(RunStatus.COMPLETED) == "done"
    assert all("_" not in status_words(s) for s in RunStatus)


def test_a_run_asked_for_elsewhere_names_who_asked() -> None:
    shown = thread_view(run(RunStatus.RUNNING), [msg(1, "you", "Porto")], [], "Ada").bubbles
    assert [b.who for b in shown] == ["Ada", "You"]
