"""`python manage.py bootstrap_demo`: first-start setup for `make run`.

Creates (once) an operator account, a default plan, and a demo tenant with a service account,
an API key allowed everything on the tenant's topics and groups, and a topic; the generated
passwords and secret are kept in ``var/demo-credentials.json`` (mode 600) so later starts can
print them again. Prints where to go and ready-to-paste kcat commands.
"""

import json
import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from tenants import services
from tenants.models import Acl, Plan, Tenant


class Command(BaseCommand):
    help = "Create the operator account and a demo tenant on first start; print how to connect."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--web", default="http://127.0.0.1:8000/")

    def handle(self, *args, web: str, **options):  # type: ignore[no-untyped-def]
        path = settings.VAR_DIR / "demo-credentials.json"
        saved = json.loads(path.read_text()) if path.exists() else None
        if saved is None or not Tenant.objects.filter(slug="demo").exists():
            saved = self._create()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(saved, indent=2))
            os.chmod(path, 0o600)
        operator_bootstrap = settings.OPERATOR_BOOTSTRAP_SERVERS.split(",")[0]
        tenant_bootstrap = settings.BOOTSTRAP_SERVERS.split(",")[0]
        ca = os.environ.get("SSL_CA_LOCATION", "var/certs/ca.pem")
        sasl = (f"-X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 "
                f"-X sasl.username={saved['api_key']} -X sasl.password={saved['api_secret']} "
                f"-X ssl.ca.location={ca}")
        self.stdout.write(
            f"\n  Console:   {web}\n"
            f"  Operator:  {saved['operator']} / {saved['operator_password']}\n"
            f"  API docs:  {web}api/docs/\n"
            f"  Demo tenant 'demo': API key {saved['api_key']}, secret {saved['api_secret']}\n"
            f"  As the tenant (SASL_SSL, sees its own topic 'events'):\n"
            f"    echo hello | kcat -b {tenant_bootstrap} {sasl} -t events -P\n"
            f"    kcat -b {tenant_bootstrap} {sasl} -t events -C -e\n"
            f"  As the operator (PLAINTEXT, sees the real cluster):\n"
            f"    kcat -b {operator_bootstrap} -L\n"
        )

    @transaction.atomic
    def _create(self) -> dict[str, str]:
        user_model = get_user_model()
        password = secrets.token_urlsafe(12)
        operator, _ = user_model.objects.get_or_create(
            username="operator", defaults={"is_staff": True, "is_superuser": True})
        operator.set_password(password)
        operator.save()
        plan = Plan.objects.filter(slug="standard").first() or services.create_plan(
            operator, slug="standard", name="Standard", max_partitions=100,
            producer_byte_rate=10 * 1024 * 1024, consumer_byte_rate=20 * 1024 * 1024)
        tenant = services.create_tenant(operator, slug="demo", name="Demo tenant", plan=plan)
        account = services.create_principal(operator, tenant, name="demo-app",
                                            description="created by make run")
        api_key, secret = services.create_api_key(operator, account, description="demo key")
        services.create_topic(operator, tenant, name="events", partitions=3)  # cluster default RF
        for resource_type in (Acl.TOPIC, Acl.GROUP):
            services.grant_acl(operator, tenant, principal=account, resource_type=resource_type,
                               resource_name="", operation="All", pattern_type=Acl.PREFIXED)
        return {"operator": "operator", "operator_password": password,
                "api_key": api_key.key, "api_secret": secret}
