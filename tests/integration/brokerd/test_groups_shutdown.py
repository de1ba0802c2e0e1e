"""A broker stops promptly even while a JoinGroup is parked in the coordinator."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer

from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.test_groups import create_topic

pytestmark = pytest.mark.integration


def test_graceful_stop_is_not_held_up_by_a_parked_join_group(
        start_broker: Callable[..., BrokerProcess]) -> None:
    # Kafka's 3 s initial delay parks the first member's JoinGroup for 3 s.
    broker = start_broker(group_initial_rebalance_delay_ms="3000",
                          offsets_topic_num_partitions="4")
    create_topic(broker.bootstrap, "slow", 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "patient",
                         "session.timeout.ms": 6000})
    consumer.subscribe(["slow"])
    try:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:  # FindCoordinator, then the parked JoinGroup
            consumer.poll(0.05)
        broker.stop(timeout=10)
        # The broker's own account ("broker 1 stopped in 0.12s"): without answering the
        # parked JoinGroup first it would wait out the whole 1 s drain grace.
        match = re.search(r"stopped in ([0-9.]+)s", broker.output())
        assert match is not None, broker.output()
        print(f"stop took {match.group(1)}s")
        assert float(match.group(1)) < 1.0
    finally:
        consumer.close()
