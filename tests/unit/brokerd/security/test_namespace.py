"""Tenant name mapping: a tenant reaches only its own names, operators see everything."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerd.security import ANONYMOUS, Principal, TenantNamespace

ACME = TenantNamespace("acme")
OPERATOR = TenantNamespace(None)


def test_round_trip() -> None:
    assert ACME.to_cluster("orders") == "acme.orders"
    assert ACME.to_tenant("acme.orders") == "orders"
    assert ACME.owns("acme.orders")


def test_guessing_another_tenants_name_stays_in_ones_own_namespace() -> None:
    assert ACME.to_cluster("globex.orders") == "acme.globex.orders"
    assert not TenantNamespace("globex").owns(ACME.to_cluster("globex.orders"))


@pytest.mark.parametrize("cluster_name", [
    "globex.orders", "acme", "acmeorders", "acme-eu.orders", "__consumer_offsets", "__usage",
    "__acme.x", "",
])
def test_names_outside_the_prefix_are_invisible(cluster_name: str) -> None:
    assert ACME.to_tenant(cluster_name) is None
    assert not ACME.owns(cluster_name)


def test_tenant_whose_slug_extends_another_is_separate() -> None:
    acme_eu = TenantNamespace("acme-eu")
    assert not ACME.owns(acme_eu.to_cluster("orders"))
    assert not acme_eu.owns(ACME.to_cluster("orders"))


def test_internal_names_a_tenant_sends_map_into_its_namespace() -> None:
    assert ACME.to_cluster("__consumer_offsets") == "acme.__consumer_offsets"
    assert ACME.to_tenant("acme.__consumer_offsets") == "__consumer_offsets"


def test_operator_namespace_is_the_identity() -> None:
    for name in ("__consumer_offsets", "acme.orders", "anything"):
        assert OPERATOR.to_cluster(name) == name
        assert OPERATOR.to_tenant(name) == name
    assert OPERATOR.is_operator and not ACME.is_operator
    assert OPERATOR.max_topic_name_length == 249


def test_listing_keeps_only_the_tenants_names() -> None:
    listing = ["acme.orders", "globex.orders", "__consumer_offsets", "acme.payments"]
    assert ACME.visible(listing) == {"acme.orders": "orders", "acme.payments": "payments"}
    assert OPERATOR.visible(listing) == {name: name for name in listing}


def test_namespace_of_a_principal() -> None:
    assert TenantNamespace.for_principal(Principal("acme.orders", "acme")).prefix == "acme."
    assert TenantNamespace.for_principal(ANONYMOUS).is_operator


def test_topic_name_budget_leaves_room_for_the_prefix() -> None:
    assert ACME.max_topic_name_length == 249 - len("acme.")
    assert len(ACME.to_cluster("x" * ACME.max_topic_name_length)) == 249


@pytest.mark.parametrize("slug", ["Acme", "ac.me", "", "acme/x"])
def test_tenant_must_be_a_slug(slug: str) -> None:
    with pytest.raises(ValueError):
        TenantNamespace(slug)


@given(tenant=st.from_regex(r"[a-z0-9-]{1,8}", fullmatch=True),
       other=st.from_regex(r"[a-z0-9-]{1,8}", fullmatch=True), name=st.text(max_size=20))
def test_no_name_reaches_another_tenant(tenant: str, other: str, name: str) -> None:
    mine, theirs = TenantNamespace(tenant), TenantNamespace(other)
    cluster_name = mine.to_cluster(name)
    assert mine.to_tenant(cluster_name) == name
    assert theirs.owns(cluster_name) == (tenant == other)
