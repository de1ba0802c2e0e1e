"""`python manage.py zk_sync`: reconcile ZooKeeper with the whole desired state, report changes.

In ``quotas`` because the whole state spans ``tenants`` and ``quotas``, and only the upper
app may import both.
"""

from django.core.management.base import BaseCommand

from quotas.tasks import reconcile_all


class Command(BaseCommand):
    help = "Repair drift between the control plane's database and ZooKeeper; print what changed."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--zookeeper", help="connect string (default: settings.ZOOKEEPER_CONNECT)")

    def handle(self, *args, zookeeper: str | None = None, **options):  # type: ignore[no-untyped-def]
        changes = reconcile_all(zookeeper)
        for line in changes:
            self.stdout.write(line)
        self.stdout.write(f"zk_sync: {len(changes)} change(s)")
