"""OpenTelemetry traces of runs, off by default (``[telemetry]``).

A run is one trace: a span for the run, one per agent (a child of the agent that created
it), one per turn, and under each turn its model call and tool calls, with the GenAI
semantic-convention attributes (``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` /
``output_tokens``, ``gen_ai.usage.cost``…). A run and its agents live across many worker
processes, so their spans are not held open anywhere: the run's trace context is stored
with it (``RunState.traceparent``, on the head every turn reads), each agent's span id is
derived from that trace and the agent's id, and the run's and an agent's span are written
once they end, by whichever process ends them, with the times they started. Any process
can thus parent a turn under its agent without asking anyone.

Hooks (in the turn): :func:`turn` around a turn, :func:`turn_read` once its state is read,
:func:`model_called` and :func:`tool_called` after each call. A request's planning is a
``caramba.planning`` span under the run's (:func:`planning` around it), with the router's,
the planner's and the prompt creator's calls as its chat spans (``model_called`` after
each). With tracing off each is a check of a variable or two; the SDK is imported only
when tracing is turned on.
"""

from core.telemetry.calls import model_called, model_failed, tool_called
from core.telemetry.planning import planning
from core.telemetry.tracing import (
    clock,
    force_flush,
    install,
    new_traceparent,
    setup,
    turn,
    turn_read,
    uninstall,
)

__all__ = [
    "clock",
    "force_flush",
    "install",
    "model_called",
    "model_failed",
    "new_traceparent",
    "planning",
    "setup",
    "tool_called",
    "turn",
    "turn_read",
    "uninstall",
]
