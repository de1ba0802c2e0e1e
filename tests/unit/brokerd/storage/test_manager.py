from pathlib import Path

import pytest

from brokerd.storage import LogConfig, LogManager
from brokerd.storage import manager as manager_module
from brokerd.storage.checkpoint import read_offset_checkpoint
from brokerd.storage.directory_remover import DIRECTORY_REMOVER

from .conftest import FakeClock, batch, commit
from .helpers import manager, offsets, read_all


def test_create_append_close_and_reload(tmp_path: Path, clock: FakeClock) -> None:
    logs = manager([tmp_path], clock)
    log = logs.get_or_create("orders", 0)
    assert logs.get_or_create("orders", 0) is log
    assert logs.get("orders", 1) is None
    log.append_as_leader(batch(2), 0)
    logs.get_or_create("orders", 1).append_as_leader(batch(1), 0)
    for each in logs.all_logs().values():
        commit(each)
    logs.close()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert read_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint") == {
        ("orders", 0): 2,
        ("orders", 1): 1,
    }
    high_watermarks = (tmp_path / "replication-offset-checkpoint").read_text()
    assert high_watermarks == "0\n2\norders 0 2\norders 1 1\n"

    reloaded = manager([tmp_path], clock)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    assert sorted(reloaded.all_logs()) == [("orders", 0), ("orders", 1)]
    again = reloaded.get("orders", 0)
    assert again is not None and again.high_watermark == 2
    assert offsets(read_all(again)) == [(0, 1)]


def test_missing_marker_means_recovery(tmp_path: Path, clock: FakeClock) -> None:
    logs = manager([tmp_path], clock)
    log = logs.get_or_create("t", 0)
    log.append_as_leader(batch(1), 0)
    logs.checkpoint()
    active = log.segments[-1].log_path
    with active.open("ab") as f:
        f.write(b"torn write")
    # no close(): the process died
    recovered = manager([tmp_path], clock).get("t", 0)
    assert recovered is not None and recovered.log_end_offset == 1
    assert active.stat().st_size == len(batch(1))


def test_log_start_offsets_survive_restart(tmp_path: Path, clock: FakeClock) -> None:
    logs = manager([tmp_path], clock)
    log = logs.get_or_create("t", 0)
    for _ in range(3):
        log.append_as_leader(batch(1), 0)
    commit(log).delete_records_before(2)
    logs.close()
    reloaded = manager([tmp_path], clock).get("t", 0)
    assert reloaded is not None and reloaded.log_start_offset == 2


def test_partitions_spread_over_log_dirs_and_delete(tmp_path: Path, clock: FakeClock) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    logs = manager(dirs, clock)
    for partition in range(4):
        logs.get_or_create("t", partition)
    assert sorted(p.name for p in dirs[0].iterdir() if p.is_dir()) == ["t-0", "t-2"]
    assert sorted(p.name for p in dirs[1].iterdir() if p.is_dir()) == ["t-1", "t-3"]
    assert logs.delete("t", 1) and not logs.delete("t", 1)
    assert not (dirs[1] / "t-1").exists()
    assert read_offset_checkpoint(dirs[1] / "log-start-offset-checkpoint") == {("t", 3): 0}
    (dirs[0] / "t-9.abc-delete").mkdir()
    logs.close()
    assert sorted(manager(dirs, clock).all_logs()) == [("t", 0), ("t", 2), ("t", 3)]
    assert not (dirs[0] / "t-9.abc-delete").exists()


def test_configs_apply_per_topic(tmp_path: Path, clock: FakeClock) -> None:
    logs = manager([tmp_path], clock)
    log = logs.get_or_create("t", 0, LogConfig(retention_ms=5))
    assert log.config.retention_ms == 5
    logs.get_or_create("t", 0, LogConfig(retention_ms=6))
    assert log.config.retention_ms == 6
    logs.close()
    reloaded = LogManager([tmp_path], LogConfig(), clock=clock)
    reloaded.load({"t": LogConfig(retention_ms=7)})
    reloaded_log = reloaded.get("t", 0)
    assert reloaded_log is not None and reloaded_log.config.retention_ms == 7


def test_periodic_hooks(tmp_path: Path, clock: FakeClock) -> None:
    logs = manager([tmp_path], clock, retention_ms=1000, flush_messages=2, file_delete_delay_ms=0)
    log = logs.get_or_create("t", 0)
    log.append_as_leader(batch(1), 0)
    assert logs.logs_due_for_flush(clock.now_ms) == []
    log.append_as_leader(batch(1), 0)
    assert logs.logs_due_for_flush(clock.now_ms) == [log]
    log.flush()
    assert log.recovery_point == 2 and logs.logs_due_for_flush(clock.now_ms) == []
    log.roll()
    log.append_as_leader(batch(1), 0)
    clock.advance(5000)
    commit(log)
    assert log.enforce_retention(clock.now_ms) == 1
    log.delete_expired_files(clock.now_ms)
    segment_files = sorted(p.name for p in log.directory.iterdir() if p.name.startswith("0"))
    assert segment_files == [f"{2:020d}{suffix}" for suffix in (".index", ".log", ".timeindex")]


def count_checkpoint_writes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """From now on, the paths of the offset checkpoints the manager writes, in order (still
    written)."""
    paths: list[Path] = []
    real_write = manager_module.write_offset_checkpoint

    def counted_write(path: Path, offsets: dict[tuple[str, int], int]) -> None:
        paths.append(path)
        real_write(path, offsets)

    monkeypatch.setattr(manager_module, "write_offset_checkpoint", counted_write)
    return paths


def test_a_batch_of_deletions_rewrites_each_log_dirs_checkpoints_once(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting a topic's partitions together: every log goes, partitions not hosted are
    skipped, and each log dir's three checkpoints are written once for the batch (once
    per partition made deleting a large topic quadratic)."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    logs = manager(dirs, clock)
    for partition in range(6):
        logs.get_or_create("t", partition).append_as_leader(batch(1), 0)
    logs.get_or_create("kept", 0)
    written = count_checkpoint_writes(monkeypatch)
    gone = logs.delete_many([("t", p) for p in range(7)])
    assert gone == [("t", p) for p in range(6)]  # ("t", 6) was never hosted
    assert sorted(written) == sorted(d / name for d in dirs for name in (
        "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
        "replication-offset-checkpoint"))
    assert sorted(logs.all_logs()) == [("kept", 0)]
    assert not any(any(d.glob("t-*[0-9]")) for d in dirs)  # renamed at once
    DIRECTORY_REMOVER.wait()  # and removed in the background
    assert [p.name for d in dirs for p in d.iterdir() if p.is_dir()] == ["kept-0"]
    assert read_offset_checkpoint(dirs[0] / "log-start-offset-checkpoint") == {("kept", 0): 0}
    assert read_offset_checkpoint(dirs[1] / "log-start-offset-checkpoint") == {}


def test_deletions_begun_one_by_one_forget_the_logs_at_once_and_checkpoint_on_completion(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large topic's logs are deleted a slice of the loop at a time: each leaves the
    manager (and its name is free) at once; the checkpoints are rewritten once, at the end."""
    logs = manager([tmp_path], clock)
    for partition in range(3):
        logs.get_or_create("t", partition).append_as_leader(batch(1), 0)
    written = count_checkpoint_writes(monkeypatch)
    assert [logs.begin_deletion(("t", p)) for p in (0, 1, 9)] == [True, True, False]
    assert sorted(logs.all_logs()) == [("t", 2)] and written == []
    assert not (tmp_path / "t-0").exists()
    assert logs.get_or_create("t", 0).log_end_offset == 0  # a new log under the old name
    logs.complete_deletions()
    assert len(written) == 3
    DIRECTORY_REMOVER.wait()
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["t-0", "t-2"]
