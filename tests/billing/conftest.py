"""Fixtures for the billing job's tests: one small local Spark session per test run, and
the real-broker fixtures of the brokerd integration tests."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from pyspark.sql import SparkSession

from spark.billing import build_session
from tests.billing.october import RECORDS
from tests.billing.spark_cluster import SHORT_LIVED_JVM_OPTIONS
from tests.billing.usage_records import create_usage_topic, produce
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.conftest import broker, start_broker

__all__ = ["broker", "spark", "start_broker", "usage_broker"]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """``local[2]`` with 512 MiB: the machine is small and shared; its driver JVM, which
    lives only for this test run, with the client compiler only (see
    :data:`tests.billing.spark_cluster.SHORT_LIVED_JVM_OPTIONS`)."""
    session = build_session("local[2]", [
        "spark.sql.shuffle.partitions=2",
        f"spark.driver.extraJavaOptions={SHORT_LIVED_JVM_OPTIONS}"])
    yield session
    session.stop()
    # py4j closes its last connections when they are garbage-collected at interpreter exit
    # and logs that at INFO, after pytest has closed the stream its handler writes to: the
    # "--- Logging error ---" tracebacks at the end of every run.  Nothing worth a line.
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture
def usage_broker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    """A real broker whose 3-partition ``__usage`` holds the October scenario's records."""
    broker = start_broker()
    create_usage_topic(broker.bootstrap, partitions=3)
    for partition, arrival, record in RECORDS:
        produce(broker.bootstrap, [(arrival, record)], partition=partition)
    return broker
