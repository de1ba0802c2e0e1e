"""The same job, unchanged, on a real standalone Spark cluster: ``--master spark://…``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.billing.october import EXPECTED_OCTOBER_LINES, PLANS, line_quantities
from tests.billing.spark_cluster import StandaloneCluster, loopback_env
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.support.services import REPO_ROOT

JOB_TIMEOUT_S = 400


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[StandaloneCluster]:
    workdir = tmp_path / "cluster"
    workdir.mkdir()
    started = StandaloneCluster(workdir, short_lived=True)
    try:
        yield started.start()
    finally:
        started.stop()


def test_job_runs_unchanged_on_a_standalone_cluster(
        cluster: StandaloneCluster, usage_broker: BrokerProcess, tmp_path: Path) -> None:
    plans = tmp_path / "plans.json"
    plans.write_text(json.dumps(PLANS))
    out = tmp_path / "out"
    job = subprocess.run(
        [sys.executable, "spark/billing.py", "--month", "2026-10", "--bootstrap",
         usage_broker.bootstrap, "--plans", str(plans), "--out", str(out),
         "--master", cluster.master_url],
        cwd=REPO_ROOT, env=loopback_env(tmp_path, short_lived=True), capture_output=True, text=True,
        timeout=JOB_TIMEOUT_S)
    assert job.returncode == 0, job.stderr[-4000:] + cluster.logs()
    assert line_quantities(out / "2026-10") == EXPECTED_OCTOBER_LINES
    # The executors ran on the worker, not in the driver.
    executor_logs = list((tmp_path / "cluster" / "work").glob("app-*/*/stderr"))
    assert executor_logs, cluster.logs()
    assert "reading __usage with 3 tasks" in job.stderr
