"""Control-plane fixtures shared by the API and console tests: a plan, an operator, tenants,
and tenant-admin users. Registered for the whole suite by ``tests/conftest.py``
(``pytest_plugins``); Django modules are imported inside the fixtures, so loading this plugin
needs no configured Django."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def plan(db: Any) -> Any:
    from quotas.models import Plan

    return Plan.objects.create(slug="basic", name="Basic", max_partitions=20,
                               producer_byte_rate=1_048_576, consumer_byte_rate=2_097_152)


@pytest.fixture
def operator(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("op", password="pw", is_staff=True)


@pytest.fixture
def make_tenant(plan: Any, operator: Any) -> Callable[[str], Any]:
    from tenants import services

    def make(slug: str) -> Any:
        return services.create_tenant(operator, slug=slug, name=slug.title(), plan=plan)

    return make


@pytest.fixture
def make_tenant_admin(django_user_model: Any) -> Callable[[Any], Any]:
    """A console user ``admin-<slug>`` (password "pw") who administers the given tenant."""
    from tenants import services
    from tenants.models import Principal

    def make(tenant: Any) -> Any:
        user = django_user_model.objects.create_user(f"admin-{tenant.slug}", password="pw")
        services.create_principal(None, tenant, name=f"admin-{tenant.slug}", kind=Principal.USER,
                                  role=Principal.ADMIN, user=user)
        return user

    return make
