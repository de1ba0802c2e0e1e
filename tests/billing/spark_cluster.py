"""A real standalone Spark cluster (one master, one worker) from the pyspark installation.

Both daemons bind to loopback on free ports and run in their own process group, so
:meth:`StandaloneCluster.stop` also ends the executors the worker started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from tests.support.services import free_port, wait_for_port

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
START_TIMEOUT_S = 90.0


# For JVMs that live seconds: the client compiler only, and one garbage-collector thread.
# C2's compilations cost the standalone-cluster test 40 % of its CPU (43 against 25
# CPU-seconds, test alone), on a shared 2-core machine where `make test` is CPU-bound.
# Tests only: the billing benchmark measures the job as it runs in production.
SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def loopback_env(workdir: Path, short_lived: bool = False) -> dict[str, str]:
    """Environment for every process of the cluster test: loopback only, small daemons;
    ``short_lived``: every JVM started with it (master, worker, executors, the job's
    driver) with :data:`SHORT_LIVED_JVM_OPTIONS`."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
           "SPARK_LOG_DIR": str(workdir), "SPARK_WORKER_DIR": str(workdir / "work")}
    if short_lived:
        env["JAVA_TOOL_OPTIONS"] = SHORT_LIVED_JVM_OPTIONS
    return env


@dataclass
class StandaloneCluster:
    workdir: Path
    cores: int = 1  # of the one worker (bench/billing.py --cluster gives it more)
    short_lived: bool = False  # see loopback_env
    port: int = field(default_factory=free_port)
    webui_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - owned by the process
        process = subprocess.Popen([str(SPARK_CLASS), *args], stdout=log,
                                   stderr=subprocess.STDOUT,
                                   env=loopback_env(self.workdir, self.short_lived),
                                   start_new_session=True)
        log.close()
        self.processes.append(process)
        return process

    def start(self) -> StandaloneCluster:
        master = self._spawn("master", "org.apache.spark.deploy.master.Master",
                             "--host", "127.0.0.1", "--port", str(self.port),
                             "--webui-port", str(self.webui_port))
        wait_for_port(self.port, START_TIMEOUT_S, master)
        self._spawn("worker", "org.apache.spark.deploy.worker.Worker", self.master_url,
                    "--host", "127.0.0.1", "--webui-port", str(free_port()),
                    "--cores", str(self.cores), "--memory", "1g",
                    "--work-dir", str(self.workdir / "work"))
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.alive_workers() < 1:
            if time.monotonic() > deadline:
                raise TimeoutError("no worker registered with the master:\n" + self.logs())
            time.sleep(0.5)
        return self

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/",
                                        timeout=2) as answer:
                state = json.load(answer)
        except OSError:
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def logs(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-4000:]
                         for path in sorted(self.workdir.glob("*.log")))

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
