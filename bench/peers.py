"""Caramba beside other agent frameworks: the cost of an agent turn, side by side.

    .venv/bin/python bench/peers.py [--quick] [--systems caramba_inline,autogen,...]
                                    [--n 1000] [--runs 3]

Every system runs the same workload (``bench/peer_drivers/common.py``) in a process of
its own against one OpenAI-compatible fake model served from this process (so its CPU is
not counted): a 13-agent cohort (orchestrator → 3 leads → 3 members, 5 model calls each,
one trivial tool per call, members of a team concurrent; 200 ms model, 2 cohorts one
after the other) and ``--n`` independent agents at once (5 calls each, 500 ms model).
The peers are installed by the bench into virtual environments of their own under
``bench/.peers/`` (git-ignored), at pinned versions, with their telemetry off.

Figures per system, each the best of ``--runs`` runs (the lowest CPU, overhead and RSS,
the highest ratio):

- ``cpu_ms_per_call``: CPU time of the process doing the work (all its threads) in the
  cohort phase ÷ the model calls it made (the Celery variant: the worker process's);
- ``overhead_pct``: the cohort's wall time against its critical path of 15 model calls
  (orchestrator delegates → lead delegates → member's 5 → lead's 4 → orchestrator's 4);
- ``ratio_1000``: model calls per second with ``--n`` agents in flight against the
  ideal ``n`` ÷ 0.5 s;
- ``rss_mb``: the process's peak resident memory.

``system=raw_http`` is the floor: the CPU of one bare HTTP call (aiohttp, the JSON
encoded and decoded) of a Caramba member's last request, to the same server.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp import web  # noqa: E402

from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer  # noqa: E402


class _DeepBacklogSite(web.SockSite):
    """The fake model's listening socket with room for 1,000 agents connecting at once:
    with aiohttp's default backlog (128) connections beyond it wait for SYN retries, and
    clients with a short connect timeout (the openai SDK's 5 s) fail."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["backlog"] = 4096
        super().__init__(*args, **kwargs)


web.SockSite = _DeepBacklogSite  # type: ignore[misc]  # read by FakeLLMServer.start

DRIVERS = ROOT / "bench" / "peer_drivers"
PEERS = ROOT / "bench" / ".peers"
COHORT_MS, FLAT_MS = 200, 500
CRITICAL_PATH_CALLS = 15
COHORTS = 2
_NAME = re.compile(r"You are (Orchestrator|Lead \d+|Member \d+\.\d+|Agent \d+|Warmup \d+)")
# Turned off for every child: the peers' telemetry and tracing, litellm's price-map fetch.
QUIET_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "ANONYMIZED_TELEMETRY": "false",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "AUTOGEN_DISABLE_RUNTIME_TRACING": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "OPENAI_API_KEY": "x",
}


@dataclass(frozen=True)
class System:
    name: str
    driver: str
    pins: tuple[str, ...] = ()  # empty: this project's own .venv
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    @property
    def python(self) -> Path:
        if not self.pins:
            return Path(sys.executable)
        return PEERS / self.name / "bin" / "python"


SYSTEMS = {
    s.name: s
    for s in (
        System("caramba_inline", "caramba_driver.py", args=("--mode", "inline")),
        System("caramba_celery", "caramba_driver.py", args=("--mode", "celery")),
        System(
            "autogen",
            "autogen_driver.py",
            ("autogen-agentchat==0.7.5", "autogen-ext[openai]==0.7.5"),
        ),
        System(
            "langgraph", "langgraph_driver.py", ("langgraph==1.2.22", "langchain-openai==1.7.3")
        ),
        System("openai_agents", "openai_agents_driver.py", ("openai-agents==0.24.0",)),
        System("crewai", "crewai_driver.py", ("crewai==1.15.30",)),
    )
}


# --- the fake model's side of the workload -------------------------------------------------


def _name(body: dict[str, Any]) -> str:
    first = body["messages"][0].get("content") or ""
    found = _NAME.search(first if isinstance(first, str) else json.dumps(first))
    return found.group(1) if found else "?"


def _calls(body: dict[str, Any], tool: str) -> int:
    return sum(
        c["function"]["name"] == tool
        for m in body["messages"]
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or ()
    )


def _results(body: dict[str, Any]) -> int:
    return sum(
        "[Result from" in (m.get("content") or "")
        for m in body["messages"]
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    )


def respond(body: dict[str, Any]) -> FakeReply:
    """A parent: delegate, then 3 calculations, then its answer; anyone else: 4
    calculations, then an answer. Caramba delegates by creating its children and waiting
    for all their results (``wait_for_messages(all_children=True)``, as its fan-out
    playbook says: the peers' delegation returns once every child answered), and answers
    through ``finish``."""
    name = _name(body)
    wait: tuple[str, dict[str, Any] | str] = ("wait_for_messages", {"all_children": True})
    tools = {t["function"]["name"] for t in body.get("tools") or ()}
    calcs = _calls(body, "calculate")
    if name == "Orchestrator" or name.startswith("Lead"):
        if "create_agent" in tools:
            if not _calls(body, "create_agent"):
                n = name[-1]
                kids = (
                    [(f"Lead {i}", "lead") for i in (1, 2, 3)]
                    if name == "Orchestrator"
                    else [(f"Member {n}.{i}", "member") for i in (1, 2, 3)]
                )
                creates: list[tuple[str, dict[str, Any] | str]] = [
                    (
                        "create_agent",
                        {
                            "name": kid,
                            "role": role,
                            "purpose": "work",
                            "tools": ["calculate", "create_agent"]
                            if role == "lead"
                            else ["calculate"],
                            "budget_share": 0.3,
                        },
                    )
                    for kid, role in kids
                ]
                return FakeReply(tool_calls=[*creates, wait])
            if _results(body) < 3:  # (woken early: one more call than the peers make)
                return FakeReply(tool_calls=[wait])
        elif not _calls(body, "delegate"):
            return FakeReply(tool_calls=[("delegate", {"task": "your part"})])
        if calcs < 3:
            return FakeReply(tool_calls=[("calculate", {"expression": f"{calcs} + 1"})])
    elif calcs < 4:
        return FakeReply(tool_calls=[("calculate", {"expression": f"{calcs} + 1"})])
    if "finish" in tools:
        return FakeReply(tool_calls=[("finish", {"result": f"{name}: done"})])
    return FakeReply(content=f"{name}: done")


# --- installing and running the systems ----------------------------------------------------


def install(system: System) -> None:
    """The peer in a virtual environment of its own, at its pinned versions (once)."""
    if not system.pins:
        return
    home = PEERS / system.name
    marker = home / "bench-pins.txt"
    wanted = "\n".join(system.pins)
    if marker.exists() and marker.read_text() == wanted:
        return
    print(f"installing {system.name}: {' '.join(system.pins)}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    subprocess.run(
        [str(home / "bin" / "pip"), "install", "-q", *system.pins],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker.write_text(wanted)


def run_child(
    server: ThreadedFakeLLMServer, system: System, phase: str, n: int, repeat: int
) -> dict[str, Any]:
    server.latency_s = (COHORT_MS if phase == "cohort" else FLAT_MS) / 1000
    server.requests.clear()  # (the bench's memory: a child forked from it starts as big)
    before = len(server.requests)
    env = {**os.environ, **QUIET_ENV, "PYTHONUNBUFFERED": "1", **dict(system.env)}
    cmd = [
        str(system.python),
        str(DRIVERS / system.driver),
        *system.args,
        "--base-url",
        server.base_url,
        "--phase",
        phase,
        "--n",
        str(n),
        "--repeat",
        str(repeat),
    ]
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        log.seek(0)
        out = log.read()
    found = [line for line in out.splitlines() if line.startswith("BENCH ")]
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"{system.name} {phase} failed ({proc.returncode}):\n{out[-3000:]}")
    result: dict[str, Any] = json.loads(found[-1][6:])
    for line in out.splitlines():  # Caramba's: which model client it used
        if line.startswith("BENCH_CLIENT "):
            result["client"] = line.split(" ", 1)[1]
        if line.startswith("BENCH_THREADS "):  # the Celery worker's CPU by thread
            result["threads"] = json.loads(line.split(" ", 1)[1])
        if line.startswith("BENCH_CPU_CLOCK "):  # its clock: ns (schedstat) or 10 ms ticks
            result["clock"] = line.split(" ", 1)[1]
        if line.startswith("BENCH_LITELLM_IMPORTED True") and result.get("client") != "litellm":
            result["client"] = result.get("client", "?") + " (litellm imported)"
    bodies = server.requests[before:]
    result["calls"] = sum(not _name(b).startswith("Warmup") for b in bodies)
    result["bodies"] = bodies
    return result


def measure(server: ThreadedFakeLLMServer, system: System, n: int, runs: int) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for _ in range(runs):
        cohort = run_child(server, system, "cohort", n, COHORTS)
        flat = run_child(server, system, "flat", n, 1)
        ideal = CRITICAL_PATH_CALLS * COHORT_MS / 1000
        figures = {
            "cpu_ms_per_call": cohort["cpu_s"] * 1000 / max(1, cohort["calls"]),
            "overhead_pct": (min(cohort["walls"]) - ideal) / ideal * 100,
            "calls_per_cohort": cohort["calls"] / COHORTS,
            "cpu_ms_per_call_n": flat["cpu_s"] * 1000 / max(1, flat["calls"]),
            "ratio_n": flat["calls"] / flat["walls"][0] / (n / (FLAT_MS / 1000)),
            "rss_mb": max(cohort["rss_mb"], flat["rss_mb"]),
        }
        if "clock" in cohort:
            best["clock"] = cohort["clock"]
        for part, seconds in cohort.get("threads", {}).items():  # main_s, loop_s, other_s
            figures[f"cpu_ms_{part[:-2]}"] = seconds * 1000 / max(1, cohort["calls"])
        if system.name == "caramba_inline":  # (not @before)
            _keep_request(cohort["bodies"])
        for key, value in figures.items():
            better = max if key == "ratio_n" else min
            best[key] = better(best.get(key, value), value)
        if "client" in cohort:
            best["client"] = cohort["client"]
    return best


_REQUEST = ROOT / "bench" / ".peers" / "raw_request.json"


def _keep_request(bodies: list[dict[str, Any]]) -> None:
    """A member's last request (the longest), for the raw HTTP floor."""
    members = [b for b in bodies if _name(b).startswith("Member")]
    if members:
        _REQUEST.parent.mkdir(parents=True, exist_ok=True)
        _REQUEST.write_text(json.dumps(max(members, key=lambda b: len(json.dumps(b)))))


def raw_http(server: ThreadedFakeLLMServer, calls: int) -> dict[str, float]:
    server.latency_s = COHORT_MS / 1000
    cmd = [sys.executable, str(DRIVERS / "raw_http_driver.py"), server.base_url, str(_REQUEST)]
    out = subprocess.run(
        [*cmd, str(calls)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    found = json.loads(next(line for line in out.splitlines() if line.startswith("BENCH "))[6:])
    return {"cpu_ms_per_call": found["cpu_s"] * 1000 / calls, "rss_mb": found["rss_mb"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 run, --n 200")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="also measure the Caramba in DIR (e.g. `git archive <commit>` unpacked there) as "
        "caramba_inline@before and caramba_celery@before, in the same run",
    )
    opts = parser.parse_args()
    if opts.before:
        root = str(Path(opts.before).resolve())
        for name in ("caramba_inline", "caramba_celery"):
            base = SYSTEMS[name]
            SYSTEMS[f"{name}@before"] = System(
                f"{name}@before", base.driver, args=base.args, env=(("BENCH_CARAMBA_ROOT", root),)
            )
        if opts.systems == parser.get_default("systems"):
            opts.systems = ",".join(SYSTEMS)
    n = opts.n or (200 if opts.quick else 1000)
    runs = opts.runs or (1 if opts.quick else 3)
    # raw_http (the floor) is measured whatever is chosen.
    chosen = [SYSTEMS[s] for s in opts.systems.split(",") if s and s != "raw_http"]
    for system in chosen:
        install(system)
    results: dict[str, dict[str, Any]] = {}
    with ThreadedFakeLLMServer() as server:
        server.set_responder(respond)
        for system in chosen:
            t0 = time.monotonic()
            results[system.name] = measure(server, system, n, runs)
            print(f"{system.name}: {results[system.name]} ({time.monotonic() - t0:.0f} s)")
        if not _REQUEST.exists():
            _keep_request([])  # no Caramba request yet: one of the cohort's instead
        if _REQUEST.exists():
            best = [raw_http(server, 200) for _ in range(runs)]
            results["raw_http"] = {
                "cpu_ms_per_call": min(r["cpu_ms_per_call"] for r in best),
                "rss_mb": min(r["rss_mb"] for r in best),
            }
    print_table(results, n)


def print_table(results: dict[str, dict[str, Any]], n: int) -> None:
    head = f"{'system':<24}{'cpu_ms/call':>12}{'overhead%':>11}{f'ratio_{n}':>11}"
    head += f"{'cpu_ms@n':>10}{'calls/cohort':>13}{'rss_mb':>8}  client"
    print(head)
    nan = float("nan")
    for name, r in results.items():
        print(
            f"{name:<24}{r['cpu_ms_per_call']:>12.2f}{r.get('overhead_pct', nan):>11.1f}"
            f"{r.get('ratio_n', nan):>11.3f}{r.get('cpu_ms_per_call_n', nan):>10.2f}"
            f"{r.get('calls_per_cohort', nan):>13.1f}{r['rss_mb']:>8.0f}  {r.get('client', '')}"
        )
    peers = {k: v for k, v in results.items() if not k.startswith(("caramba", "raw"))}
    if peers:
        best_cpu = min(peers.items(), key=lambda kv: kv[1]["cpu_ms_per_call"])
        best_rss = min(peers.items(), key=lambda kv: kv[1]["rss_mb"])
        floor = results.get("raw_http", {}).get("cpu_ms_per_call", nan)
        print(f"best peer: cpu {best_cpu[0]}, rss {best_rss[0]}")
        for name, r in results.items():
            if name.startswith("caramba"):
                cpu = r["cpu_ms_per_call"]
                print(
                    f"goals {name}: cpu/best_peer={cpu / best_cpu[1]['cpu_ms_per_call']:.2f} "
                    f"(goal <= 0.5) cpu/raw_http={cpu / floor:.1f} (goal <= 5) "
                    f"rss/best_peer={r['rss_mb'] / best_rss[1]['rss_mb']:.2f} (goal <= 0.75)"
                )
    for name, r in results.items():
        if "cpu_ms_loop" in r:
            print(
                f"{name} worker cpu_ms/call by thread: main (Celery's consumer) "
                f"{r['cpu_ms_main']:.2f}, turns' loop {r['cpu_ms_loop']:.2f}, "
                f"others (pool, publishing) {r['cpu_ms_other']:.2f} "
                f"(clock: {r.get('clock', 'ticks')})"
            )
    for name, r in results.items():
        client = f" client={r['client'].replace(' ', '_')}" if r.get("client") else ""
        print(
            f"bench peers: system={name} cpu_ms_per_call={r['cpu_ms_per_call']:.2f} "
            f"overhead_pct={r.get('overhead_pct', nan):.1f} "
            f"ratio_{n}={r.get('ratio_n', nan):.3f} rss_mb={r['rss_mb']:.0f}{client}"
        )


if __name__ == "__main__":
    main()
