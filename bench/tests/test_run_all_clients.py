"""Client processes of the benchmark are never left running: a client past its time is
killed, and a failed client's error names its module."""

from __future__ import annotations

import subprocess

import pytest

from bench.run_all import finish_client, run_client, start_client


def test_a_client_past_its_time_is_killed() -> None:
    client = start_client("timeit", ["-n", "1", "import time; time.sleep(60)"])
    with pytest.raises(subprocess.TimeoutExpired):
        finish_client(client, timeout_s=0.5)
    assert client.poll() is not None


def test_a_failed_client_is_an_error_naming_its_module() -> None:
    with pytest.raises(RuntimeError, match="timeit exited with"):
        run_client("timeit", ["--no-such-option"], timeout_s=30)

