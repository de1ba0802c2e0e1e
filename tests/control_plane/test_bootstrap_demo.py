"""`make run`'s first-start setup: operator, demo tenant with a usable key, idempotent restarts."""

import pytest
from django.core.management import call_command

from tenants.models import Acl, ApiKey, Tenant, Topic

pytestmark = pytest.mark.django_db


def test_bootstrap_demo_creates_once_and_prints_connect_commands(settings, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    settings.VAR_DIR = tmp_path
    call_command("bootstrap_demo")
    first = capsys.readouterr().out
    key = ApiKey.objects.get()
    assert Tenant.objects.get().slug == "demo"
    assert Topic.objects.get().physical_name == "demo.events"
    assert {(a.resource_type, a.pattern_type, a.resource_name, a.operation)
            for a in Acl.objects.all()} == {("Topic", "PREFIXED", "", "All"),
                                            ("Group", "PREFIXED", "", "All")}
    assert f"sasl.username={key.key}" in first and "security.protocol=SASL_SSL" in first
    assert "Operator:  operator / " in first
    assert (tmp_path / "demo-credentials.json").stat().st_mode & 0o777 == 0o600

    call_command("bootstrap_demo")
    assert capsys.readouterr().out == first
    assert ApiKey.objects.count() == 1
