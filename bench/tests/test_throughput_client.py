"""The producer's batch hand-off: queue-full refusals are retried, other errors reported."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError

from bench.throughput_client import enqueue


class FakeProducer:
    """Accepts ``room`` messages per produce_batch call and refuses the rest the way
    confluent-kafka does: an ``_error`` key on each refused message dict."""

    def __init__(self, room: int, refusal: int = KafkaError._QUEUE_FULL) -> None:
        self.room = room
        self.refusal = refusal
        self.accepted = 0
        self.polls = 0

    def __len__(self) -> int:
        return 0

    def produce_batch(self, topic: str, messages: list[dict[str, Any]], partition: int) -> int:
        for index, message in enumerate(messages):
            if index < self.room:
                self.accepted += 1
            else:
                message["_error"] = KafkaError(self.refusal)
        return min(self.room, len(messages))

    def poll(self, timeout: float) -> int:
        self.polls += 1
        return 0


def test_queue_full_refusals_are_retried_until_all_are_accepted() -> None:
    producer = FakeProducer(room=3)
    messages = [{"value": b"x"} for _ in range(10)]
    assert enqueue(producer, "t", messages) == []  # type: ignore[arg-type]
    assert producer.accepted == 10
    assert producer.polls == 3  # 3 + 3 + 3 accepted, then the last 1 fits
    assert all("_error" not in m for m in messages)  # the batch can be sent again


def test_other_refusals_are_returned_not_retried() -> None:
    producer = FakeProducer(room=4, refusal=KafkaError._UNKNOWN_PARTITION)
    errors = enqueue(producer, "t", [{"value": b"x"} for _ in range(6)])  # type: ignore[arg-type]
    assert producer.accepted == 4
    assert len(errors) == 2
