"""core.process.heap: start-up objects out of the collector's walks, once per process."""

from __future__ import annotations

import gc

from core.process import heap


def test_startup_objects_frozen_once_and_gen0_collected_less_often() -> None:
    made = [object() for _ in range(10)]  # alive through start-up: frozen with the rest
    frozen = heap.freeze_startup_objects()
    assert frozen == gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] >= heap.GEN0_THRESHOLD
    # A second call (services opened again in the same process) freezes nothing more.
    later = [object() for _ in range(10)]
    assert heap.freeze_startup_objects() == frozen == gc.get_freeze_count()
    assert made and later
