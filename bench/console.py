"""Console benchmark: the lag snapshot and the pages with 500 groups × 20 partitions in one tenant.

``python bench/console.py [--groups 500] [--partitions 20] [--rounds 5] [--output FILE]``

Starts a private ZooKeeper and one broker (:mod:`bench.cluster`), a throw-away SQLite control
plane, one tenant ``bench`` with a topic ``bench.events`` of ``--partitions`` partitions holding
records, and ``--groups`` consumer groups ``bench.g-NNN`` whose offsets are committed on every
partition through the Kafka protocol (AdminClient, OffsetCommit).  Then it measures:

- the snapshot task (``dashboard.snapshots.snapshot_all``): its Kafka reads (ListGroups,
  DescribeGroups, OffsetFetch, ListOffsets), its evaluation and storage, over ``--rounds``;
- the render time of the group list page, one group's page, and the REST list (median of 10),
  as a signed-in tenant admin through Django's test client (no network in between).

Prints a JSON document (and writes it to ``--output`` when given).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # ``python bench/console.py`` puts bench/ first, not the repo
    sys.path.insert(0, str(REPO_ROOT))

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.cluster import ZOOKEEPER_CHROOT, Cluster  # noqa: E402

RECORDS_PER_PARTITION = 1000
PAGE_RENDERS = 10


def prepare_cluster(bootstrap: str, groups: int, partitions: int) -> None:
    """The topic, its records, and every group's committed offsets (lag 0…999 per partition)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("bench.events", partitions, 1)])["bench.events"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for p in range(partitions):
        for i in range(RECORDS_PER_PARTITION):
            producer.produce("bench.events", value=b"x" * 100, partition=p, key=b"%d" % i)
    assert producer.flush(60) == 0
    futures: list[Any] = []
    for g in range(groups):
        offsets = [TopicPartition("bench.events", p, (g * 7 + p * 13) % RECORDS_PER_PARTITION)
                   for p in range(partitions)]
        futures += admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(f"bench.g-{g:03d}", offsets)]).values()
    for future in futures:
        future.result(30)


def median_ms(action, count: int = PAGE_RENDERS) -> float:  # type: ignore[no-untyped-def]
    durations = []
    for _ in range(count):
        started = time.perf_counter()
        action()
        durations.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(durations), 1)


def run(groups: int, partitions: int, rounds: int) -> dict:
    cluster = Cluster.start()
    workdir = Path(tempfile.mkdtemp(prefix="bench-console-"))
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "service.settings.dev", "KAFKASAAS_VAR_DIR": str(workdir),
        "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
        "ZOOKEEPER_CONNECT": cluster.zookeeper.address + ZOOKEEPER_CHROOT,
        "OPERATOR_BOOTSTRAP_SERVERS": cluster.bootstrap, "KAFKA_ADMIN_TIMEOUT_S": "30",
        "LAG_HISTORY_SECONDS": "3600", "DEFAULT_REPLICATION_FACTOR": "1", "LOG_LEVEL": "WARNING"})
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.test import Client
        from django.test.utils import setup_test_environment

        from dashboard import snapshots
        from dashboard.models import ConsumerGroupLag
        from quotas.models import Plan
        from service.celery import app
        from tenants import services
        from tenants.models import Principal

        setup_test_environment()  # lets the test client run against this throw-away database
        call_command("migrate", verbosity=0)
        app.conf.task_always_eager = True  # publication runs inline (ZooKeeper only, no Redis)
        plan = Plan.objects.create(slug="bench", name="Bench", max_partitions=100_000)
        tenant = services.create_tenant(None, slug="bench", name="Bench", plan=plan)
        from django.contrib.auth.models import User

        user = User.objects.create_user("bench-admin", password="-")
        services.create_principal(None, tenant, name="admin", kind=Principal.USER,
                                  role=Principal.ADMIN, user=user)

        started = time.monotonic()
        prepare_cluster(cluster.bootstrap, groups, partitions)
        prepare_s = time.monotonic() - started

        timings = [snapshots.snapshot_all() for _ in range(rounds)]
        stored = ConsumerGroupLag.objects.filter(tenant=tenant).count()
        client = Client()
        client.force_login(user)

        def page(path: str) -> None:
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)

        return {
            "groups": groups, "partitions_per_group": partitions, "groups_stored": stored,
            "setup_s": round(prepare_s, 2),
            "snapshot_s": {key: [round(t[key], 3) for t in timings]
                           for key in ("fetch_s", "store_s", "total_s")},
            "render_ms": {
                "group_list_page": median_ms(lambda: page("/t/bench/consumer-groups/")),
                "group_page": median_ms(
                    lambda: page(f"/t/bench/consumer-groups/g-{groups // 2:03d}/")),
                "rest_group_list": median_ms(
                    lambda: page("/api/v1/tenants/bench/consumer-groups/?limit=500")),
            },
        }
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    result = run(args.groups, args.partitions, args.rounds)
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
