"""The pure transaction state machine: transitions, fencing, timeouts, verification."""

from __future__ import annotations

from dataclasses import replace

from brokerd.protocol import ErrorCode
from brokerd.transactions import state as m
from brokerd.transactions.records import decode_key, decode_value, encode_key, encode_value
from brokerd.transactions.state import TxnMetadata, TxnState

MAX = 900_000
TP = ("t", 0)


def fresh() -> TxnMetadata:
    decision = m.init_producer_id(None, "tx", 60_000, MAX, new_producer_id=7, now_ms=100)
    assert decision.error == ErrorCode.NONE and decision.persist is not None
    return decision.persist


def ongoing() -> TxnMetadata:
    decision = m.add_partitions(fresh(), 7, 0, frozenset({TP}), now_ms=200)
    assert decision.persist is not None
    return decision.persist


def test_a_new_id_gets_a_fresh_producer_and_reinit_bumps_the_epoch() -> None:
    first = fresh()
    assert (first.producer_id, first.producer_epoch, first.state) == (7, 0, TxnState.EMPTY)
    again = m.init_producer_id(first, "tx", 60_000, MAX, 99, 300).persist
    assert again is not None and (again.producer_id, again.producer_epoch) == (7, 1)
    exhausted = replace(first, producer_epoch=m.MAX_EPOCH)
    renewed = m.init_producer_id(exhausted, "tx", 60_000, MAX, 99, 300).persist
    assert renewed is not None and (renewed.producer_id, renewed.producer_epoch) == (99, 0)


def test_timeouts_above_the_maximum_are_refused() -> None:
    assert m.init_producer_id(None, "tx", MAX + 1, MAX, 7, 0).error == \
        ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_reinit_over_an_open_transaction_aborts_it_with_a_bumped_epoch_first() -> None:
    decision = m.init_producer_id(ongoing(), "tx", 60_000, MAX, 99, 300)
    assert decision.error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert decision.persist is not None
    assert decision.persist.state == TxnState.PREPARE_ABORT
    assert decision.persist.producer_epoch == 1 and decision.markers == {TP}


def test_add_partitions_starts_and_extends_the_transaction() -> None:
    txn = ongoing()
    assert txn.state == TxnState.ONGOING and txn.start_ms == 200
    assert m.add_partitions(txn, 7, 0, frozenset({TP}), 300).persist is None  # already in
    more = m.add_partitions(txn, 7, 0, frozenset({("t", 1)}), 300).persist
    assert more is not None and more.partitions == {TP, ("t", 1)} and more.start_ms == 200


def test_zombies_and_strangers_are_fenced() -> None:
    txn = ongoing()
    assert m.add_partitions(txn, 7, 1, frozenset({TP}), 0).error == ErrorCode.PRODUCER_FENCED
    assert m.end_txn(txn, 8, 0, True, 0).error == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert m.add_partitions(None, 7, 0, frozenset(), 0).error == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_end_txn_prepares_then_completes_and_retries_are_idempotent() -> None:
    decision = m.end_txn(ongoing(), 7, 0, commit=True, now_ms=500)
    prepared = decision.persist
    assert prepared is not None and prepared.state == TxnState.PREPARE_COMMIT
    assert decision.markers == {TP}
    assert m.end_txn(prepared, 7, 0, True, 600).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert m.add_partitions(prepared, 7, 0, frozenset({TP}), 600).error == \
        ErrorCode.CONCURRENT_TRANSACTIONS
    done = m.complete(prepared, 700)
    assert done.state == TxnState.COMPLETE_COMMIT and done.partitions == frozenset()
    assert m.end_txn(done, 7, 0, True, 800).error == ErrorCode.NONE
    assert m.end_txn(done, 7, 0, False, 800).error == ErrorCode.INVALID_TXN_STATE
    assert m.end_txn(fresh(), 7, 0, True, 800).error == ErrorCode.INVALID_TXN_STATE


def test_expiry_and_verification() -> None:
    txn = ongoing()
    assert not txn.expired(200 + 59_999) and txn.expired(200 + 60_000)
    aborted = m.abort_with_bump(txn, 0).persist
    assert aborted is not None and aborted.producer_epoch == 1
    assert m.verify(txn, 7, 0, TP) == ErrorCode.NONE
    assert m.verify(txn, 7, 0, ("t", 9)) == ErrorCode.INVALID_TXN_STATE
    assert m.verify(aborted, 7, 0, TP) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert m.verify(fresh(), 7, 0, TP) == ErrorCode.INVALID_TXN_STATE


def test_records_round_trip() -> None:
    txn = replace(ongoing(), partitions=frozenset({TP, ("t", 3), ("u", 0)}))
    assert decode_key(encode_key("tx")) == "tx"
    assert decode_value("tx", encode_value(txn)) == txn
    assert TxnState.PREPARE_COMMIT.label == "PrepareCommit"
