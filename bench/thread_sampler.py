"""Where a multi-threaded process's CPU goes, thread by thread (a Celery worker's consumer,
turns' loop, publishing and acknowledging threads).

    python bench/thread_sampler.py MODULE [args...]     # runs MODULE as __main__, sampled
    python bench/thread_sampler.py --report OUT [TOP] [CALLS]

Every ``PROF_PERIOD`` seconds of wall time (0.003) a thread of the process reads each
thread's CPU clock (``pthread_getcpuclockid``: kernel accounting, nanoseconds) and charges
the CPU it spent since the last sample to its current Python stack. The totals per thread
are exact; the split inside a thread is biased towards the points where it gives up the
GIL (a socket write, a poll): read the inclusive shares, not the leaves. It samples only
while the file ``$PROF_ON`` exists and writes ``$PROF_OUT`` (a pickle: thread name →
stack → ns) each time that file goes away. It costs about 20 ms of CPU a second of its
own, reported apart.

``bench/peer_drivers/caramba_driver.py`` runs its Celery worker under it with
``CARAMBA_BENCH_SAMPLE=<out>`` (sampling the measured phase only, into ``<out>.<phase>``),
e.g. ``CARAMBA_BENCH_SAMPLE=/tmp/w bench/peers.py --quick --systems caramba_celery``, then
``bench/thread_sampler.py --report /tmp/w.cohort 30 137`` (137: the phase's model calls).
"""

from __future__ import annotations

import os
import pickle
import runpy
import sys
import threading
import time
from collections import Counter
from types import FrameType

Stack = tuple[tuple[str, str, int], ...]


def _stack(frame: FrameType | None) -> Stack:
    out = []
    while frame is not None and len(out) < 60:
        code = frame.f_code
        out.append((code.co_filename, code.co_name, frame.f_lineno))
        frame = frame.f_back
    return tuple(out)


def _sample(on: str, out: str, period: float) -> None:
    me = threading.get_ident()
    clocks: dict[int, int] = {}
    last: dict[int, int] = {}
    data: dict[str, Counter[Stack]] = {}
    active, own0, checked = False, 0, 0.0
    while True:
        time.sleep(period)
        now = time.monotonic()
        if now - checked > 0.05:
            checked = now
            if os.path.exists(on) and not active:
                active, data, last, own0 = True, {}, {}, time.thread_time_ns()
            elif active and not os.path.exists(on):
                active = False
                data["(sampler)"] = Counter(
                    {(("sampler", "self", 0),): time.thread_time_ns() - own0}
                )
                with open(out, "wb") as f:
                    pickle.dump(data, f)
        if not active:
            continue
        names = {t.ident: t.name for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            try:
                if ident not in clocks:
                    clocks[ident] = time.pthread_getcpuclockid(ident)
                cpu = time.clock_gettime_ns(clocks[ident])
            except OSError:
                continue
            prev, last[ident] = last.get(ident), cpu
            if prev is None or cpu <= prev:
                continue
            name = names.get(ident, str(ident))
            name = name.rstrip("0123456789_-") or name  # one line per pool of threads
            data.setdefault(name, Counter())[_stack(frame)] += cpu - prev


def report(path: str, top: int = 25, calls: float = 1.0) -> None:
    """Per thread: its CPU (ms, and ms per ``calls``), then its inclusive shares."""
    with open(path, "rb") as f:
        data: dict[str, Counter[Stack]] = pickle.load(f)
    for name, stacks in sorted(data.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(stacks.values())
        print(f"== {name}: {total / 1e6:.1f} ms ({total / 1e6 / calls:.3f} ms per call)")
        inclusive: Counter[tuple[str, str]] = Counter()
        for stack, ns in stacks.items():
            for key in {(f[0].rsplit("/", 1)[-1], f[1]) for f in stack}:
                inclusive[key] += ns
        for (file, func), ns in inclusive.most_common(top):
            print(f"   {ns / total * 100:5.1f}%  {file}:{func}")


def main() -> None:
    if sys.argv[1:2] == ["--report"]:
        extra = sys.argv[3:]
        report(sys.argv[2], int(extra[0]) if extra else 25, float(extra[1]) if extra[1:] else 1)
        return
    period = float(os.environ.get("PROF_PERIOD", "0.003"))
    args = (os.environ["PROF_ON"], os.environ["PROF_OUT"], period)
    threading.Thread(target=_sample, args=args, name="prof-sampler", daemon=True).start()
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
