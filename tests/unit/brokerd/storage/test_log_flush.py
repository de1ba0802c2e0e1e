import threading
from collections.abc import Callable

from brokerd.storage import Log

from .conftest import FakeClock, batch
from .helpers import read_all

OpenLog = Callable[..., Log]


def test_flush_policy_by_messages_and_time(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(flush_messages=5, flush_ms=1000)
    log.append_as_leader(batch(4), 0)
    assert not log.flush_due(clock.now_ms)
    assert log.flush_due(clock.now_ms + 1000)
    log.append_as_leader(batch(1), 0)
    assert log.flush_due(clock.now_ms)
    log.flush()
    assert log.recovery_point == 5
    assert not log.flush_due(clock.now_ms + 10_000)  # nothing new to flush


def test_rolled_segment_is_due_for_flush_even_without_a_policy(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch(1), 0)
    assert not log.flush_due(0)
    log.roll()
    assert log.flush_due(0)
    log.flush()
    assert log.recovery_point == 1 and not log.flush_due(0)


def test_flush_in_a_worker_thread_while_appending(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=20_000)
    stop = threading.Event()
    errors: list[BaseException] = []
    observed: list[int] = []

    def flusher() -> None:
        try:
            while not stop.is_set():
                log.flush()
                observed.append(log.recovery_point)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    worker = threading.Thread(target=flusher)
    worker.start()
    for _ in range(300):
        log.append_as_leader(batch(2, value_size=200), 0)
    stop.set()
    worker.join(timeout=10)
    assert errors == [] and not worker.is_alive()
    assert observed == sorted(observed) and observed[-1] <= 600
    log.flush()
    assert log.recovery_point == 600 and len(log.segments) > 3
    assert len(read_all(log)) == 300
