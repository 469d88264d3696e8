"""The garbage collector's share of a long-lived process: what start-up made is moved out
of its way once the process is ready (as the Celery worker and the chat bots do), and the
youngest generation is collected less often.

Start-up leaves ~150,000 objects (modules, settings, the Services, clients) that live as
long as the process. Left in the collected generations, every gen1/gen2 collection walks
them again with the turns' event loop stalled meanwhile (a 30-50 ms gen2 in the middle of
bench/bus.py's deliveries). Python's default gen0 threshold (700 allocations net of
deallocations) collects gen0 about 80 times in bench/bus.py's 1,000 deliveries, each
0.3-1 ms in the middle of one: at 10,000 a turn's short-lived objects are mostly freed by
reference counting before a collection is due, and the run sees 0-3 (same peak RSS)."""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)
# Allocations (net of deallocations) between two gen0 collections; Python's default: 700.
GEN0_THRESHOLD = 10_000
_frozen = False


def freeze() -> int:
    """Collect once and move every object left into the collector's permanent generation
    (what start-up made lives as long as the process); returns how many are frozen. The
    Celery worker (``tasks.worker``) and the chat bots (``bots.chat.startup``) call it once
    they are ready; embedded services through :func:`freeze_startup_objects`."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def freeze_startup_objects() -> int:
    """Collect once, move every object left into the collector's permanent generation and
    raise gen0's threshold to ``GEN0_THRESHOLD`` (gen1's and gen2's kept); returns how
    many objects are frozen. Once per process: later calls (a process that opens services
    again, such as a test run) leave the heap as it is."""
    global _frozen
    if _frozen:
        return gc.get_freeze_count()
    _frozen = True
    frozen = freeze()
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(GEN0_THRESHOLD, gen0), gen1, gen2)
    log.debug("start-up objects frozen: %d kept out of garbage collection", frozen)
    return frozen
