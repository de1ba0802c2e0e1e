"""Consumer-protocol (KIP-848) groups in the console without a broker: the ConsumerGroupDescribe
codec against Kafka's own schemas (kio), the snapshot's store step on a fabricated cluster read
holding a classic and a consumer group, the pages, the REST API, the live payload, and the
OpenAPI schema."""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from kio.schema.consumer_group_describe.v0 import request as kio_request
from kio.schema.consumer_group_describe.v0 import response as kio_response
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import GroupId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32, i32Timedelta

from dashboard import consumer_group_describe as cgd
from dashboard import kafka, live
from dashboard.kafka import GroupDescription, Member
from dashboard.models import ConsumerGroupLag
from dashboard.snapshots import ClusterSnapshot, store_tenant
from tenants.models import Tenant

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_request_bytes_are_what_kafka_parses() -> None:
    data = cgd.encode_request(7, "kafkasaas-console", ["acme.a", "acme.b"])
    payload = memoryview(data[4:])
    assert int.from_bytes(data[:4], "big") == len(payload)
    header, header_size = entity_reader(RequestHeader)(payload, 0)
    body, body_size = entity_reader(kio_request.ConsumerGroupDescribeRequest)(payload, header_size)
    assert (header.request_api_key, header.request_api_version, header.correlation_id,
            header.client_id) == (69, 0, 7, "kafkasaas-console")
    assert body.group_ids == ("acme.a", "acme.b") and not body.include_authorized_operations
    assert header_size + body_size == len(payload)


def _assignment(*pairs: tuple[str, int]) -> kio_response.Assignment:
    topics: dict[str, list[int]] = {}
    for topic, partition in pairs:
        topics.setdefault(topic, []).append(partition)
    return kio_response.Assignment(topic_partitions=tuple(
        kio_response.TopicPartitions(topic_id=uuid.uuid4(), topic_name=TopicName(topic),
                                     partitions=tuple(i32(p) for p in partitions))
        for topic, partitions in topics.items()))


def test_response_written_by_kafkas_schema_is_decoded() -> None:
    response = kio_response.ConsumerGroupDescribeResponse(
        throttle_time=i32Timedelta.parse(timedelta(0)), groups=(
            kio_response.DescribedGroup(
                error_code=ErrorCode.none, group_id=GroupId("acme.kip"), group_state="Reconciling",
                group_epoch=i32(5), assignment_epoch=i32(5), assignor_name="uniform", members=(
                    kio_response.Member(
                        member_id="m-1", instance_id="i-1", rack_id=None, member_epoch=i32(4),
                        client_id="c1", client_host="/10.0.0.1",
                        subscribed_topic_names=(TopicName("acme.orders"),), subscribed_topic_regex=None,
                        assignment=_assignment(("acme.orders", 1), ("acme.orders", 0)),
                        target_assignment=_assignment(("acme.orders", 0))),)),
            kio_response.DescribedGroup(
                error_code=ErrorCode.group_id_not_found, error_message="Group acme.x not found.",
                group_id=GroupId("acme.x"), group_state="Dead", group_epoch=i32(-1),
                assignment_epoch=i32(-1), assignor_name="", members=())))
    buffer = io.BytesIO()
    entity_writer(ResponseHeader)(buffer, ResponseHeader(correlation_id=i32(9)))
    entity_writer(kio_response.ConsumerGroupDescribeResponse)(buffer, response)
    correlation_id, (kip, missing) = cgd.decode_response(buffer.getvalue())
    assert correlation_id == 9
    assert (kip.group_state, kip.group_epoch, kip.assignment_epoch, kip.assignor_name) == (
        "Reconciling", 5, 5, "uniform")
    (member,) = kip.members
    assert (member.member_id, member.instance_id, member.member_epoch, member.client_host) == (
        "m-1", "i-1", 4, "/10.0.0.1")
    assert member.assignment == (("acme.orders", 0), ("acme.orders", 1))
    assert member.target_assignment == (("acme.orders", 0),)
    assert member.subscribed_topic_names == ("acme.orders",)
    assert (missing.error_code, missing.error_message) == (69, "Group acme.x not found.")
    with pytest.raises(ValueError, match="ends early"):
        cgd.decode_response(buffer.getvalue()[:-3])


def test_epochs_replace_what_confluent_kafka_told() -> None:
    told = GroupDescription("acme.kip", "UNKNOWN", (Member("m-1", "c1", "/h"),), kafka.CONSUMER,
                            "uniform")
    answer = cgd.DescribedGroup(0, None, "acme.kip", "Stable", 3, 3, "range", (
        cgd.DescribedMember("m-1", None, None, 3, "c1", "/h", ("acme.orders",), None,
                            (("acme.orders", 0),), (("acme.orders", 0),)),))
    described = kafka.with_epochs(told, answer)
    assert (described.state, described.assignor, described.group_epoch,
            described.assignment_epoch) == ("STABLE", "range", 3, 3)
    assert described.members[0].member_epoch == 3 and described.group_type == kafka.CONSUMER
    assert GroupDescription("g", "RECONCILING").active  # no resets while reconciling


def cluster(member_epoch: int = 7) -> ClusterSnapshot:
    """acme: a classic group and a consumer-protocol group mid-reconciliation (m-2 waits for
    orders-1 that m-1 still holds); globex: a consumer group of its own."""
    kip = GroupDescription(
        "acme.kip", "RECONCILING", (
            Member("m-1", "kip-1", "/10.0.0.1", (("acme.orders", 0), ("acme.orders", 1)),
                   instance_id="static-1", member_epoch=member_epoch,
                   target_assignment=(("acme.orders", 0),), subscribed_topics=("acme.orders",)),
            Member("m-2", "kip-2", "/10.0.0.2", (), member_epoch=8,
                   target_assignment=(("acme.orders", 1),), subscribed_regex="ord.*")),
        kafka.CONSUMER, "uniform", group_epoch=8, assignment_epoch=8)
    return ClusterSnapshot(
        groups={"acme.kip": kip,
                "acme.billing": GroupDescription("acme.billing", "STABLE", (
                    Member("c-1", "billing-1", "/10.0.0.3", (("acme.orders", 0),)),),
                    kafka.CLASSIC, "range"),
                "globex.ledger": GroupDescription("globex.ledger", "STABLE", (), kafka.CONSUMER,
                                                  "uniform", 2, 2)},
        committed={"acme.kip": {("acme.orders", 0): 30, ("acme.orders", 1): 10},
                   "acme.billing": {("acme.orders", 0): 50},
                   "globex.ledger": {("globex.plans", 0): 1}},
        bounds={("acme.orders", 0): (0, 50), ("acme.orders", 1): (0, 20), ("globex.plans", 0): (0, 5)},
        types={"acme.kip": "consumer", "acme.billing": "classic", "globex.ledger": "consumer"})


@pytest.fixture
def kip(acme: Tenant, globex: Tenant) -> ConsumerGroupLag:
    store_tenant(acme, cluster(), T0)
    store_tenant(globex, cluster(), T0)
    return ConsumerGroupLag.objects.get(tenant=acme, group="kip")


@pytest.mark.django_db
def test_store_keeps_type_epochs_and_members_without_prefixes(kip: ConsumerGroupLag,
                                                              acme: Tenant) -> None:
    assert (kip.group_type, kip.state, kip.assignor, kip.group_epoch, kip.assignment_epoch) == (
        "consumer", "RECONCILING", "uniform", 8, 8)
    assert kip.total_lag == 20 + 10
    first = kip.members[0]
    assert (first["member_epoch"], first["instance_id"], first["subscribed_topics"]) == (
        7, "static-1", ["orders"])
    assert first["assignment"] == [["orders", 0], ["orders", 1]]
    assert first["target_assignment"] == [["orders", 0]]
    assert kip.members[1]["subscribed_regex"] == "ord.*"
    billing = ConsumerGroupLag.objects.get(tenant=acme, group="billing")
    assert (billing.group_type, billing.assignor, billing.group_epoch) == ("classic", "range", None)
    assert "member_epoch" not in billing.members[0]
    assert sorted(ConsumerGroupLag.objects.filter(tenant=acme).values_list("group", flat=True)) == [
        "billing", "kip"]


@pytest.mark.django_db
def test_live_payload_tells_who_is_reconciled(kip: ConsumerGroupLag, acme: Tenant) -> None:
    detail = live.group_detail(kip)
    assert (detail["group_type"], detail["group_epoch"], detail["assignment_epoch"]) == (
        "consumer", 8, 8)
    holder, waiter = detail["members"]
    assert holder["reconciled"] is False and holder["revoking"] == [["orders", 1]]
    assert waiter["reconciled"] is False and waiter["pending"] == [["orders", 1]]
    store_tenant(acme, cluster(member_epoch=8), T0 + timedelta(seconds=5))
    holder = live.group_detail(ConsumerGroupLag.objects.get(tenant=acme, group="kip"))["members"][0]
    assert holder["reconciled"] is False  # epoch reached, orders-1 not yet released
    classic = live.group_detail(ConsumerGroupLag.objects.get(tenant=acme, group="billing"))
    assert classic["members"][0]["member_epoch"] is None
    assert classic["members"][0]["reconciled"] is None and classic["group_epoch"] is None
    assert live.group_summary(kip)["group_type"] == "consumer"


@pytest.mark.django_db
def test_group_pages_show_type_epochs_and_assignments(kip: ConsumerGroupLag, acme: Tenant,
                                                      admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    listing = client.get("/t/acme/consumer-groups/").content.decode()
    assert '<td data-field="group_type">consumer</td>' in listing
    assert '<td data-field="group_type">classic</td>' in listing and "ledger" not in listing
    page = client.get("/t/acme/consumer-groups/kip/").content.decode()
    assert 'id="group-type"' in page and ">consumer</dd>" in page
    assert 'id="group-epoch">8<' in page and 'id="assignment-epoch">8<' in page
    assert 'id="assignor">uniform<' in page and 'id="state">RECONCILING<' in page
    assert '<td data-field="member_epoch">7</td>' in page and "static-1" in page
    assert '<td data-field="target_assignment">orders-0 </td>' in page
    assert "revoking orders-1" in page and "waiting for orders-1" in page
    assert "/ord.*/" in page and "acme." not in page
    classic = client.get("/t/acme/consumer-groups/billing/").content.decode()
    assert 'id="assignor">range<' in classic and 'id="group-epoch"' not in classic
    assert 'data-group-type="classic"' in classic and "Reconciliation" not in classic


@pytest.mark.django_db
def test_rest_api_shows_consumer_groups_to_their_tenant_only(kip: ConsumerGroupLag, acme: Tenant,
                                                             globex: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    listed = client.get("/api/v1/tenants/acme/consumer-groups/").json()["results"]
    assert [(g["group"], g["group_type"]) for g in listed] == [("billing", "classic"),
                                                               ("kip", "consumer")]
    detail = client.get("/api/v1/tenants/acme/consumer-groups/kip/").json()
    assert (detail["group_epoch"], detail["assignment_epoch"], detail["assignor"]) == (8, 8, "uniform")
    assert [(m["member_id"], m["member_epoch"], m["target_assignment"]) for m in detail["members"]] == [
        ("m-1", 7, [["orders", 0]]), ("m-2", 8, [["orders", 1]])]
    assert [p["lag"] for p in detail["partitions"]] == [20, 10]
    assert client.get("/api/v1/tenants/globex/consumer-groups/ledger/").status_code in (403, 404)
    other = admin_client_for(globex)
    assert other.get("/api/v1/tenants/globex/consumer-groups/kip/").status_code == 404
    assert [g["group"] for g in other.get("/api/v1/tenants/globex/consumer-groups/").json()[
        "results"]] == ["ledger"]


@pytest.mark.django_db
def test_openapi_schema_documents_the_payload_without_warnings(tmp_path: Path) -> None:
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--file", str(target))
    schema = target.read_text()
    for name in ("group_type", "group_epoch", "assignment_epoch", "member_epoch",
                 "target_assignment", "reconciled"):
        assert f"{name}:" in schema
