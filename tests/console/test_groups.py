"""Consumer groups without a broker: the snapshot's store step on a fabricated cluster read, the
group pages, the REST API, and the live WebSocket (real Redis channel layer, session auth)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from dashboard import live
from dashboard.kafka import GroupDescription, Member
from dashboard.models import ConsumerGroupLag, LagSample, TopicThroughput
from dashboard.snapshots import ClusterSnapshot, store_tenant
from service.asgi import application
from tenants.models import Tenant

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def cluster(committed0: int, high_watermark0: int = 100) -> ClusterSnapshot:
    """acme's group billing on acme.orders (2 partitions), and globex's group on its topic."""
    return ClusterSnapshot(
        groups={"acme.billing": GroupDescription("acme.billing", "STABLE", (
                    Member("m-1", "billing-1", "/10.0.0.1", (("acme.orders", 0), ("acme.orders", 1))),)),
                "globex.secret": GroupDescription("globex.secret", "EMPTY")},
        committed={"acme.billing": {("acme.orders", 0): committed0, ("acme.orders", 1): 10},
                   "globex.secret": {("globex.plans", 0): 1}},
        bounds={("acme.orders", 0): (0, high_watermark0), ("acme.orders", 1): (0, 10),
                ("globex.plans", 0): (0, 5)})


@pytest.fixture
def billing(acme: Tenant, globex: Tenant) -> ConsumerGroupLag:
    store_tenant(acme, cluster(20), T0)
    store_tenant(globex, cluster(20), T0)
    store_tenant(acme, cluster(40, high_watermark0=130), T0 + timedelta(seconds=5))
    return ConsumerGroupLag.objects.get(tenant=acme, group="billing")


@pytest.mark.django_db
def test_store_keeps_only_the_tenants_own_groups_without_prefixes(billing: ConsumerGroupLag,
                                                                    acme: Tenant) -> None:
    assert list(ConsumerGroupLag.objects.filter(tenant=acme).values_list("group", flat=True)) == [
        "billing"]
    assert (billing.state, billing.total_lag, billing.max_lag) == ("STABLE", 90, 90)
    assert billing.members[0]["assignment"] == [["orders", 0], ["orders", 1]]
    assert billing.time_lag_s == pytest.approx(90 / (20 / 5))  # 20 records consumed in 5 s
    assert LagSample.objects.filter(tenant=acme).count() == 4  # 2 partitions × 2 snapshots
    orders = TopicThroughput.objects.get(tenant=acme, topic="orders")
    assert orders.records == 140 and orders.rate == pytest.approx((140 - 110) / 5)


@pytest.mark.django_db
def test_a_group_whose_offsets_could_not_be_read_keeps_its_row(billing: ConsumerGroupLag,
                                                               acme: Tenant) -> None:
    read = cluster(40, high_watermark0=130)
    unreadable = ClusterSnapshot(read.groups, {}, read.bounds)
    store_tenant(acme, unreadable, T0 + timedelta(seconds=10))
    kept = ConsumerGroupLag.objects.get(tenant=acme, group="billing")
    assert kept.total_lag == 90 and kept.lag == billing.lag and kept.updated_at == billing.updated_at


@pytest.mark.django_db
def test_a_group_missing_from_an_incomplete_listing_keeps_its_row(billing: ConsumerGroupLag,
                                                                  acme: Tenant) -> None:
    """A broker's ListGroups failed (it was stopped): absence proves nothing."""
    incomplete = ClusterSnapshot({}, {}, {}, groups_listed_completely=False)
    store_tenant(acme, incomplete, T0 + timedelta(seconds=10))
    kept = ConsumerGroupLag.objects.get(tenant=acme, group="billing")
    assert kept.total_lag == 90 and kept.updated_at == billing.updated_at


@pytest.mark.django_db
def test_a_group_gone_from_the_cluster_loses_its_row(billing: ConsumerGroupLag, acme: Tenant) -> None:
    store_tenant(acme, ClusterSnapshot({}, {}, {}), T0 + timedelta(seconds=10))
    assert not ConsumerGroupLag.objects.filter(tenant=acme).exists()


@pytest.mark.django_db
def test_group_pages_show_lag_and_history(billing: ConsumerGroupLag, acme: Tenant,
                                          admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    listing = client.get("/t/acme/consumer-groups/").content.decode()
    assert 'data-group="billing"' in listing and "secret" not in listing
    page = client.get("/t/acme/consumer-groups/billing/").content.decode()
    assert 'id="total-lag">90<' in page and "billing-1" in page and "22.5 s" in page
    assert "[1767225600.0, 80], [1767225605.0, 90]" in page  # the chart's history (sum per snapshot)
    assert client.get("/t/acme/consumer-groups/nope/").status_code == 404


@pytest.mark.django_db
def test_another_tenants_admin_cannot_see_the_groups(billing: ConsumerGroupLag, globex: Tenant,
                                                     admin_client_for) -> None:  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    outsider = admin_client_for(globex)
    for path in ("/t/acme/consumer-groups/", "/t/acme/consumer-groups/billing/",
                 "/t/acme/consumer-groups/billing/reset/", "/api/v1/tenants/acme/consumer-groups/",
                 "/api/v1/tenants/acme/consumer-groups/billing/"):
        assert outsider.get(path).status_code == 404, path
    api = APIClient()
    api.force_authenticate(globex.principals.get().user)
    assert [g["group"] for g in api.get("/api/v1/tenants/globex/consumer-groups/").json()[
        "results"]] == ["secret"]


@pytest.mark.django_db
def test_rest_api_lists_and_details_groups(billing: ConsumerGroupLag, acme: Tenant,
                                           admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    listing = client.get("/api/v1/tenants/acme/consumer-groups/").json()
    assert listing["count"] == 1
    summary = listing["results"][0]  # lag grew from 80 to 90 while consuming: WARN
    assert {k: summary[k] for k in ("group", "state", "members", "status", "total_lag",
                                    "max_lag")} == {
        "group": "billing", "state": "STABLE", "members": 1, "status": "WARN", "total_lag": 90,
        "max_lag": 90}
    detail = client.get("/api/v1/tenants/acme/consumer-groups/billing/").json()
    assert [(p["topic"], p["partition"], p["committed"], p["high_watermark"], p["lag"])
            for p in detail["partitions"]] == [("orders", 0, 40, 130, 90), ("orders", 1, 10, 10, 0)]
    assert detail["members"][0]["client_id"] == "billing-1"


def session_communicator(client: Client, path: str) -> WebsocketCommunicator:
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    return WebsocketCommunicator(application, path,
                                 headers=[(b"origin", b"http://localhost"), (b"cookie", cookie)])


@pytest.mark.django_db  # the consumers' database calls run on this thread, inside the test's transaction
def test_websocket_pushes_updates_to_the_tenants_viewers_only(acme: Tenant, globex: Tenant,
                                                              admin_client_for) -> None:  # type: ignore[no-untyped-def]
    store_tenant(acme, cluster(20), T0)
    row = ConsumerGroupLag.objects.get(tenant=acme, group="billing")
    insider, outsider = admin_client_for(acme), admin_client_for(globex)

    async def scenario() -> None:
        detail = session_communicator(insider, "/ws/tenants/acme/consumer-groups/billing/")
        summary = session_communicator(insider, "/ws/tenants/acme/consumer-groups/")
        spy = session_communicator(outsider, "/ws/tenants/acme/consumer-groups/billing/")
        anonymous = WebsocketCommunicator(application, "/ws/tenants/acme/consumer-groups/",
                                          headers=[(b"origin", b"http://localhost")])
        assert (await detail.connect(timeout=5))[0]
        assert (await summary.connect(timeout=5))[0]
        assert not (await spy.connect(timeout=5))[0]
        assert not (await anonymous.connect(timeout=5))[0]
        await sync_to_async(live.broadcast)("acme", [row])
        pushed = await detail.receive_json_from(timeout=5)
        assert pushed["kind"] == "detail" and pushed["group"] == "billing"
        assert pushed["total_lag"] == 80 and pushed["partitions"][0]["lag"] == 80
        listed = await summary.receive_json_from(timeout=5)
        assert listed["kind"] == "summary" and [g["group"] for g in listed["groups"]] == ["billing"]
        await detail.disconnect()
        await summary.disconnect()

    async_to_sync(scenario)()


@pytest.mark.django_db
def test_a_websocket_stays_open_across_idle_waits(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    """No message for longer than the channel layer's 5 s wait: the socket stays open and
    still delivers (it used to crash on a Redis read timeout and close with 1011)."""
    store_tenant(acme, cluster(20), T0)
    row = ConsumerGroupLag.objects.get(tenant=acme, group="billing")
    viewer = admin_client_for(acme)

    async def scenario() -> None:
        summary = session_communicator(viewer, "/ws/tenants/acme/consumer-groups/")
        assert (await summary.connect(timeout=5))[0]
        assert await summary.receive_nothing(timeout=12, interval=0.5)  # two idle waits
        await sync_to_async(live.broadcast)("acme", [row])
        listed = await summary.receive_json_from(timeout=5)
        assert listed["kind"] == "summary"
        await summary.disconnect()

    async_to_sync(scenario)()


@pytest.mark.django_db
def test_rest_api_and_page_mark_a_partition_without_a_commit(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    only_partition_0 = ClusterSnapshot(
        groups={"acme.billing": GroupDescription("acme.billing", "EMPTY")},
        committed={"acme.billing": {("acme.orders", 0): 20}},
        bounds={("acme.orders", 0): (0, 100), ("acme.orders", 1): (3, 10)})
    store_tenant(acme, only_partition_0, T0)
    client = admin_client_for(acme)
    detail = client.get("/api/v1/tenants/acme/consumer-groups/billing/").json()
    assert [(p["partition"], p["committed"], p["lag"], p["uncommitted"])
            for p in detail["partitions"]] == [(0, 20, 80, False), (1, None, 7, True)]
    assert detail["total_lag"] == 87
    assert client.get("/api/v1/tenants/acme/consumer-groups/").json()["results"][0]["total_lag"] == 87
    page = client.get("/t/acme/consumer-groups/billing/").content.decode()
    assert "none (from log start)" in page
