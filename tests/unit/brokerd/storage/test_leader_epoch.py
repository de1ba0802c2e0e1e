from pathlib import Path

from brokerd.storage.leader_epoch import LeaderEpochCache


def cache_with(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, offset in entries:
        cache.assign(epoch, offset)
    return cache


def test_assign_keeps_only_newer_epochs_and_persists(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (0, 0), (0, 10), (2, 50), (1, 60))
    assert cache.entries == [(0, 0), (2, 50)]
    assert LeaderEpochCache(cache.path).entries == [(0, 0), (2, 50)]


def test_assign_drops_entries_that_never_got_data(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (0, 0), (1, 50), (2, 50))
    assert cache.entries == [(0, 0), (2, 50)]


def test_end_offset_for_epoch(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (1, 0), (3, 40), (4, 90))
    assert cache.end_offset_for(0, 120) == (-1, -1)
    assert cache.end_offset_for(1, 120) == (1, 40)
    assert cache.end_offset_for(2, 120) == (1, 40)  # never led: answer the epoch before it
    assert cache.end_offset_for(3, 120) == (3, 90)
    assert cache.end_offset_for(4, 120) == (4, 120)
    assert cache.end_offset_for(9, 120) == (4, 120)


def test_truncation_from_both_ends(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (1, 0), (3, 40), (4, 90))
    cache.truncate_from_end(90)
    assert cache.entries == [(1, 0), (3, 40)]
    cache.truncate_from_start(55)
    assert cache.entries == [(3, 55)]
    assert LeaderEpochCache(cache.path).entries == [(3, 55)]
