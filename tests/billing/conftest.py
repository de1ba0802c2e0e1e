"""Fixtures for the billing job's tests: one small local Spark session per test run, and
the real-broker fixtures of the brokerd integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark.billing import build_session
from tests.integration.brokerd.conftest import broker, start_broker

__all__ = ["broker", "spark", "start_broker"]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """``local[2]`` with 512 MiB: the machine is small and shared."""
    session = build_session("local[2]", ["spark.sql.shuffle.partitions=2"])
    yield session
    session.stop()
