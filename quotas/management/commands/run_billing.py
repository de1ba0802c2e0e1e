"""`python manage.py run_billing --month 2026-10`: bill one UTC month and load the invoices."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from quotas.billing import load_month, run_job


class Command(BaseCommand):
    help = "Run the PySpark billing job for a month and load its invoices into the database."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--month", required=True, help="YYYY-MM (UTC)")
        parser.add_argument("--bootstrap", default=settings.OPERATOR_BOOTSTRAP_SERVERS.split(",")[0])
        parser.add_argument("--out", type=Path, default=settings.VAR_DIR / "billing")
        parser.add_argument("--master", help="Spark master, e.g. spark://host:7077 (default local[*])")
        parser.add_argument("--load-only", action="store_true",
                            help="load an existing output directory without running the job")

    def handle(self, *args, month: str, bootstrap: str, out: Path, master: str | None,  # type: ignore[no-untyped-def]
               load_only: bool, **options):
        month_dir = out / month if load_only else run_job(month, out, bootstrap=bootstrap,
                                                           master=master)
        count = load_month(month, month_dir)
        self.stdout.write(f"run_billing: loaded {count} invoice(s) for {month} from {month_dir}")
