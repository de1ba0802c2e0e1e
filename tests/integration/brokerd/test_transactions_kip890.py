"""KIP-890 part 1 on the wire: a partition leader appends a transactional batch only if
the coordinator has that partition in the producer epoch's ongoing transaction, so a
write that arrives after its transaction ended (or before it began) is refused instead
of opening a transaction nobody will ever end."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.protocol.records import build_batch
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.test_transactions import create_topic

pytestmark = pytest.mark.integration


def _produce(wire: WireClient, transactional_id: str, pid: int, epoch: int,
             sequence: int) -> int:
    batch = build_batch([(None, b"v", [], int(time.time() * 1000))], producer_id=pid,
                        producer_epoch=epoch, base_sequence=sequence, is_transactional=True)
    response = wire.request(ApiKey.PRODUCE, 9, {
        "transactional_id": transactional_id, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": "late", "partition_data": [{"index": 0, "records": batch}]}]})
    return response["responses"][0]["partition_responses"][0]["error_code"]


def _state(wire: WireClient, transactional_id: str) -> str:
    described = wire.request(ApiKey.DESCRIBE_TRANSACTIONS, 0,
                             {"transactional_ids": [transactional_id]})
    return str(described["transaction_states"][0]["transaction_state"])


def _retry(call: Callable[[], int], until: Callable[[int], bool], timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    while True:
        result = call()
        if until(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def test_a_write_outside_the_ongoing_transaction_is_refused(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker()
    create_topic(broker.bootstrap, "late")
    wire = WireClient(broker.port, timeout=30)
    try:
        _retry(lambda: wire.request(ApiKey.FIND_COORDINATOR, 3, {
            "key": "tx-late", "key_type": 1})["error_code"], lambda error: error == 0)
        init = {}

        def init_id() -> int:
            init.update(wire.request(ApiKey.INIT_PRODUCER_ID, 4, {
                "transactional_id": "tx-late", "transaction_timeout_ms": 60_000}))
            return int(init["error_code"])

        assert _retry(init_id, lambda error: error == 0) == 0
        pid, epoch = init["producer_id"], init["producer_epoch"]

        # Before AddPartitionsToTxn: not part of any transaction.
        assert _produce(wire, "tx-late", pid, epoch, 0) == ErrorCode.INVALID_TXN_STATE
        added = wire.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
            "v3_and_below_transactional_id": "tx-late", "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": "late", "partitions": [0]}]})
        assert added["results_by_topic_v3_and_below"][0]["results_by_partition"][0][
            "partition_error_code"] == 0
        assert _produce(wire, "tx-late", pid, epoch, 0) == ErrorCode.NONE
        assert _produce(wire, "tx-late", pid, epoch, 1) == ErrorCode.NONE  # continues
        ended = wire.request(ApiKey.END_TXN, 3, {"transactional_id": "tx-late",
                                                  "producer_id": pid, "producer_epoch": epoch,
                                                  "committed": True})
        assert ended["error_code"] == 0
        # A delayed write arriving once the transaction is complete (its markers written)
        # is refused, never appended.  (One racing the markers still joins the committing
        # transaction, as in Kafka with KIP-890 part 1 only: part 2 fences it.)
        _retry(lambda: 0 if _state(wire, "tx-late") == "CompleteCommit" else 1,
               lambda pending: pending == 0)
        assert _produce(wire, "tx-late", pid, epoch, 2) == ErrorCode.INVALID_TXN_STATE
        # A zombie epoch is fenced by the coordinator too.
        assert _produce(wire, "tx-late", pid, epoch - 1 if epoch else 7, 0) in (
            ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_TXN_STATE)
        offsets = wire.request(ApiKey.LIST_OFFSETS, 5, {
            "replica_id": -1, "isolation_level": 1,
            "topics": [{"name": "late", "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        assert offsets["topics"][0]["partitions"][0]["offset"] == 3  # 2 records + marker
    finally:
        wire.close()
