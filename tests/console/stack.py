"""The whole control plane as separate processes, for the browser test: daphne (HTTP and
WebSockets), a Celery worker with beat (publication and lag snapshots), and a file SQLite
database they share; ZooKeeper, Redis and the broker come from the test session.

It uses a Redis database of its own (11, plus the xdist worker's number; flushed at start) so
its Celery queue and channel layer cannot meet a developer's running service, other tests
on the same Redis, or another worker's stack running at the same time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import redis

from tests.support.services import REPO_ROOT, free_port, wait_for_port

REDIS_DB_BASE = 11  # up to gw4: Redis has databases 0-15
ACCOUNTS = """
from django.contrib.auth.models import User
from quotas.models import Plan
from tenants import services
from tenants.models import Principal

plan = Plan.objects.create(slug="basic", name="Basic", max_partitions=50)
operator = User.objects.create_user("op", password="pw", is_staff=True)
for slug in ("acme", "globex"):
    tenant = services.create_tenant(operator, slug=slug, name=slug.title(), plan=plan)
    user = User.objects.create_user(f"admin-{slug}", password="pw")
    services.create_principal(operator, tenant, name=f"admin-{slug}", kind=Principal.USER,
                              role=Principal.ADMIN, user=user)
"""


@dataclass
class Stack:
    url: str
    env: dict[str, str]
    logs: Path

    def output(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-4000:]}"
                         for log in sorted(self.logs.glob("*.log")))


def _private_redis_url() -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw3" under xdist
    database = REDIS_DB_BASE + int(worker.removeprefix("gw") or 0)
    parts = urlparse(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    return urlunparse(parts._replace(path=f"/{database}"))


@contextmanager
def control_plane(workdir: Path, zk_connect: str, operator_bootstrap: str,
                  client_bootstrap: str, extra_env: dict[str, str] | None = None
                  ) -> Iterator[Stack]:
    """The control plane reads the cluster on ``operator_bootstrap`` and shows tenants
    ``client_bootstrap`` in their client settings; ``extra_env`` adds or overrides settings
    (e.g. the tenant listener's protocol and CA)."""
    redis_url = _private_redis_url()
    redis.Redis.from_url(redis_url).flushdb()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "service.settings.dev",
           "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "KAFKASAAS_VAR_DIR": str(workdir),
           "REDIS_URL": redis_url, "ZOOKEEPER_CONNECT": zk_connect,
           "BOOTSTRAP_SERVERS": client_bootstrap, "OPERATOR_BOOTSTRAP_SERVERS": operator_bootstrap,
           "DEFAULT_REPLICATION_FACTOR": "1", "LAG_SNAPSHOT_INTERVAL_S": "1",
           "ALLOWED_HOSTS": "127.0.0.1,localhost", "LOG_LEVEL": "WARNING", **(extra_env or {})}
    manage = [sys.executable, str(REPO_ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True, cwd=REPO_ROOT)
    subprocess.run([*manage, "shell", "-c", ACCOUNTS], env=env, check=True, cwd=REPO_ROOT)
    port = free_port()
    bin_dir = Path(sys.executable).parent
    commands = {
        "web": [str(bin_dir / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                "service.asgi:application"],
        "celery": [str(bin_dir / "celery"), "-A", "service", "worker", "-B", "--concurrency", "2",
                   "--loglevel", "WARNING", "-s", str(workdir / "beat-schedule")],
    }
    processes = []
    try:
        for name, command in commands.items():
            with open(workdir / f"{name}.log", "wb") as log:
                processes.append(subprocess.Popen(command, env=env, cwd=REPO_ROOT, stdout=log,
                                                  stderr=subprocess.STDOUT))
        wait_for_port(port, 30, processes[0])
        yield Stack(f"http://127.0.0.1:{port}", env, workdir)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
