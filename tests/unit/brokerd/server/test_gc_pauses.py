"""The collector's pause keeper: survivors of a full collection are frozen, and every
sweep interval everything is unfrozen once so cycles among old objects are reclaimed."""

from __future__ import annotations

import gc
import logging
import weakref
from collections.abc import Iterator

import pytest

from brokerd.server.gc_pauses import PauseKeeper, freeze_new_objects


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_full_collection_freezes_its_survivors_and_a_sweep_unfreezes_them() -> None:
    now = [0.0]
    keeper = PauseKeeper(clock=lambda: now[0], sweep_interval_s=60)
    survivors = [[i] for i in range(1000)]  # containers the collector tracks
    keeper("start", {"generation": 2})
    keeper("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert gc.get_freeze_count() >= len(survivors)
    keeper("start", {"generation": 0})
    keeper("stop", {"generation": 0, "collected": 0, "uncollectable": 0})
    assert gc.get_freeze_count() >= len(survivors)  # young collections change nothing
    now[0] = 61.0
    keeper.after_full_collection()
    assert gc.get_freeze_count() == 0  # the sweep: the next full collection walks all
    keeper.after_full_collection()
    assert gc.get_freeze_count() >= len(survivors)  # frozen again until the next sweep


def test_a_cycle_among_frozen_objects_waits_for_the_sweep() -> None:
    now = [0.0]
    keeper = PauseKeeper(clock=lambda: now[0], sweep_interval_s=60)

    class Node:
        peer: object
    a, b = Node(), Node()
    a.peer, b.peer = b, a
    alive = weakref.ref(a)
    keeper.after_full_collection()  # a and b survived a full collection: frozen
    del a, b
    gc.collect()
    assert alive() is not None  # not walked, so not reclaimed
    now[0] = 61.0
    keeper.after_full_collection()  # the sweep
    gc.collect()
    assert alive() is None


def test_a_long_pause_is_logged_without_counting_the_frozen_objects(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    def walk_of_every_frozen_object() -> int:
        raise AssertionError("gc.get_freeze_count walks millions of objects at 30,000 "
                             "partitions, with the GIL held")
    monkeypatch.setattr(gc, "get_freeze_count", walk_of_every_frozen_object)
    keeper = PauseKeeper(logged_pause_s=0.0)
    with caplog.at_level(logging.WARNING, logger="brokerd.server.gc_pauses"):
        keeper("start", {"generation": 1})
        keeper("stop", {"generation": 1, "collected": 3, "uncollectable": 0})
    assert "generation 1 paused every thread" in caplog.text
    assert "ms of CPU; 3 objects collected" in caplog.text


def test_new_objects_are_frozen_on_request_only_while_pauses_are_kept_short() -> None:
    made = [[i] for i in range(1000)]  # containers the collector tracks
    freeze_new_objects()
    assert gc.get_freeze_count() == 0  # no keeper installed: collections as Python's
    keeper = PauseKeeper()
    gc.callbacks.append(keeper)
    try:
        freeze_new_objects()
        assert gc.get_freeze_count() >= len(made)
    finally:
        gc.callbacks.remove(keeper)
