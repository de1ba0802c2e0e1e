"""The fault checker finds each anomaly it names, and nothing in a clean history."""

from __future__ import annotations

from tests.faults.checker import Ack, Stored, check
from tests.support.txn_checker import TxnOutcome


def history(values: list[str]) -> tuple[list[Ack], list[Stored]]:
    acks = [Ack(value, 0, offset, at=float(offset)) for offset, value in enumerate(values)]
    return acks, [Stored(0, offset, value) for offset, value in enumerate(values)]


def test_a_clean_history_is_clean() -> None:
    acks, stored = history(["a-0", "b-0", "a-1", "b-1"])
    replicas = {0: {1: {0: (3, 7)}, 2: {0: (3, 7)}, 3: {}}}  # a lagging replica is fine
    report = check(acks, stored, ["a-0", "b-0", "a-1", "b-1"], replicas, must_consume=(1.5, 3.0))
    assert report.clean, report.table()
    assert (report.acknowledged, report.stored, report.consumed) == (4, 4, 4)


def test_lost_moved_and_duplicated_writes() -> None:
    acks, stored = history(["a-0", "a-1", "a-2"])
    stored = [Stored(0, 0, "a-0"), Stored(0, 1, "a-2"), Stored(0, 2, "a-2")]
    report = check(acks, stored, [])
    assert report.lost == ["a-1"]
    assert report.moved == []  # a-2 is (also) where it was acknowledged
    assert report.duplicates == ["a-2"]
    report = check(acks, [Stored(0, 0, "a-0"), Stored(0, 1, "a-2"), Stored(0, 2, "a-1")], [])
    assert report.moved == ["a-1@0:1", "a-2@0:2"]


def test_an_implicit_acknowledgement_has_no_offset_to_check_but_can_be_lost() -> None:
    acks = [Ack("a-0", 0, None, 0.0), Ack("a-1", 0, 1, 0.0), Ack("a-2", 0, None, 0.0)]
    report = check(acks, [Stored(0, 0, "a-0"), Stored(0, 1, "a-1")], [])
    assert report.moved == []
    assert report.lost == ["a-2"]


def test_order_violations_are_per_producer_and_partition() -> None:
    stored = [Stored(0, 0, "a-1"), Stored(0, 1, "b-0"), Stored(0, 2, "a-0"),
              Stored(1, 0, "a-0")]
    report = check([], stored, [])
    assert report.order_violations == ["a-0@0:2 after a-1@0"]


def test_divergent_replicas_up_to_the_common_end() -> None:
    replicas = {0: {1: {0: (4, 11), 5: (9, 12)},
                    2: {0: (4, 11), 5: (9, 99)},
                    3: {0: (4, 11)}}}  # broker 3 lags: offsets past 4 are not compared
    assert check([], [], [], replicas).divergent == []
    replicas[0][3][5] = (9, 12)
    assert check([], [], [], replicas).divergent == ["0:5 {1: (9, 12), 2: (9, 99), 3: (9, 12)}"]


def test_writes_acknowledged_in_the_window_after_healing_must_be_consumed() -> None:
    acks, stored = history(["a-0", "a-1", "a-2"])
    report = check(acks, stored, ["a-0"], must_consume=(0.5, 2.0))
    assert report.unconsumed == ["a-1", "a-2"]
    assert check(acks, stored, ["a-0"], must_consume=(0.5, 1.0)).unconsumed == ["a-1"]
    assert "unconsumed: a-1, a-2" in report.table()


def test_transactions_aborted_reads_torn_and_phantoms() -> None:
    committed = TxnOutcome("txn0", "committed", ((0, b"txn0-0"), (1, b"txn0-1")), "t")
    aborted = TxnOutcome("txn1", "aborted", ((0, b"txn1-0"),), "t")
    unknown = TxnOutcome("txn2", "unknown", ((0, b"txn2-0"), (1, b"txn2-1")), "t")
    stored = [Stored(0, 0, "txn0-0"), Stored(1, 0, "txn0-1"), Stored(0, 2, "txn1-0"),
              Stored(0, 4, "txn2-0"), Stored(0, 5, "x-0"), Stored(1, 1, "a-0")]
    report = check([], stored, [], transactions=[committed, aborted, unknown],
                   unacknowledged=[(1, "a-0")])
    assert report.aborted_reads == ["txn1-0"]
    assert report.torn == ["txn2"]  # one of its two writes visible
    assert report.phantoms == ["x-0"]  # nobody wrote it; a-0's send failed but may land
    assert report.lost == []
    assert report.transactions == {"aborted": 1, "committed": 1, "unknown": 1}
    assert "aborted reads: txn1-0" in report.table()


def test_a_committed_transaction_missing_from_the_read_is_lost() -> None:
    committed = TxnOutcome("txn0", "committed", ((0, b"txn0-0"), (1, b"txn0-1")), "t")
    report = check([], [Stored(0, 0, "txn0-0")], [], transactions=[committed])
    assert report.lost == ["txn0-1"]
    assert report.torn == ["txn0"]
    assert not report.clean
