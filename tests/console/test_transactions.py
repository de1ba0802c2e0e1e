"""The console's open transactions and operator abort, without brokers: the wire codec against
Kafka's own schemas (kio), then the REST API and pages against a fake cluster that parses each
request with kio and answers like brokerd's coordinator (one coordinator, one other broker)."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from django.core.management import call_command
from django.test import Client
from kio.schema.describe_transactions.v0 import request as describe_request
from kio.schema.describe_transactions.v0 import response as describe_response
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v3 import request as init_request
from kio.schema.init_producer_id.v3 import response as init_response
from kio.schema.list_transactions.v0 import request as list_request
from kio.schema.list_transactions.v0 import response as list_response
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import TZAware, i16, i32, i32Timedelta
from kio.static.protocol import Entity

from dashboard import kafka
from dashboard import txn_wire as wire
from dashboard.transactions import open_transaction
from tenants.models import AuditEvent, Principal, Tenant

REQUESTS: dict[int, type[Entity]] = {66: list_request.ListTransactionsRequest,
                                     65: describe_request.DescribeTransactionsRequest,
                                     22: init_request.InitProducerIdRequest}


def _parsed(data: bytes) -> tuple[RequestHeader, Any]:
    """The header and the request body, of the type its API key names (hence Any)."""
    payload = memoryview(data[4:])
    assert int.from_bytes(data[:4], "big") == len(payload)
    header, header_size = entity_reader(RequestHeader)(payload, 0)
    body, body_size = entity_reader(REQUESTS[header.request_api_key])(payload, header_size)
    assert header_size + body_size == len(payload) and header.client_id == "kafkasaas-console"
    return header, body


def _written(correlation_id: int, response: Entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(ResponseHeader)(buffer, ResponseHeader(correlation_id=i32(correlation_id)))
    entity_writer(type(response))(buffer, response)
    return buffer.getvalue()


def test_requests_are_what_kafka_parses() -> None:
    header, body = _parsed(wire.encode_list_transactions(3, ["Ongoing"]))
    assert (header.request_api_key, header.request_api_version, header.correlation_id) == (66, 0, 3)
    assert body.state_filters == ("Ongoing",) and body.producer_id_filters == ()
    header, body = _parsed(wire.encode_describe_transactions(4, ["acme.tx", "acme.ty"]))
    assert (header.request_api_key, header.request_api_version) == (65, 0)
    assert body.transactional_ids == ("acme.tx", "acme.ty")
    header, body = _parsed(wire.encode_init_producer_id(5, "acme.tx", 60000, 7, 2))
    assert (header.request_api_key, header.request_api_version) == (22, 3)
    assert (body.transactional_id, body.transaction_timeout, body.producer_id,
            body.producer_epoch) == ("acme.tx", timedelta(seconds=60), 7, 2)


@dataclass
class Txn:
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_ms: int
    partitions: tuple[tuple[str, int], ...]


class FakeCluster:
    """Broker 1 coordinates every id; broker 2 lists none and answers NOT_COORDINATOR.
    InitProducerId behaves like brokerd's: KIP-360 expected epoch, then abort with a bump."""

    def __init__(self) -> None:
        now = int(time.time() * 1000)
        self.txns = {
            "acme.orders-tx": Txn("Ongoing", 7, 2, 60000, now - 90000, (("acme.orders", 0),
                                                                          ("acme.orders", 1))),
            "acme.done-tx": Txn("CompleteCommit", 8, 0, 60000, now - 1000, ()),
            "globex.ledger-tx": Txn("Ongoing", 9, 0, 60000, now - 1000, (("globex.ledger", 0),)),
        }
        self.down: set[int] = set()
        self.inits: list[tuple[str, int, int]] = []

    def addresses(self, _admin: object = None) -> dict[int, tuple[str, int]]:
        return {1: ("b1", 9092), 2: ("b2", 9092)}

    def exchange(self, host: str, _port: int, data: bytes) -> bytes:
        broker = int(host[1:])
        if broker in self.down:
            raise kafka.KafkaRequestFailed(f"broker {host}:9092: timed out")
        header, body = _parsed(data)
        answer = getattr(self, f"_api_{header.request_api_key}")(broker, body)
        return _written(header.correlation_id, answer)

    def _api_66(self, broker: int, body: object) -> object:
        states = tuple(list_response.TransactionState(
            transactional_id=TransactionalId(tid), producer_id=ProducerId(t.producer_id),
            transaction_state=t.state) for tid, t in self.txns.items() if broker == 1)
        return list_response.ListTransactionsResponse(
            throttle_time=i32Timedelta.parse(timedelta(0)), error_code=ErrorCode.none,
            transaction_states=states)

    def _api_65(self, broker: int, body: object) -> object:
        states = []
        for tid in body.transactional_ids:  # type: ignore[attr-defined]
            t = self.txns.get(tid)
            error = (ErrorCode.not_coordinator if broker != 1 else
                     ErrorCode.none if t else ErrorCode.transactional_id_not_found)
            t = t or Txn("", -1, -1, 0, -1, ())
            topics: dict[str, list[int]] = {}
            for topic, partition in t.partitions:
                topics.setdefault(topic, []).append(partition)
            states.append(describe_response.TransactionState(
                error_code=error if broker == 1 else ErrorCode.not_coordinator,
                transactional_id=TransactionalId(tid), transaction_state=t.state,
                transaction_timeout=i32Timedelta.parse(timedelta(milliseconds=t.timeout_ms)),
                # kio's TZAware predicate wants whole seconds; the wire (and Kafka) carry
                # milliseconds, which its writer serializes as they are.
                transaction_start_time=cast(TZAware, datetime.fromtimestamp(
                    max(t.start_ms, 0) / 1000, UTC)),
                producer_id=ProducerId(t.producer_id), producer_epoch=i16(t.producer_epoch),
                topics=tuple(describe_response.TopicData(
                    topic=TopicName(topic), partitions=tuple(i32(p) for p in ps))
                    for topic, ps in topics.items())))
        return describe_response.DescribeTransactionsResponse(
            throttle_time=i32Timedelta.parse(timedelta(0)), transaction_states=tuple(states))

    def _api_22(self, broker: int, body: object) -> object:
        tid = body.transactional_id  # type: ignore[attr-defined]
        expected = (body.producer_id, body.producer_epoch)  # type: ignore[attr-defined]
        self.inits.append((tid, *expected))
        t = self.txns[tid]
        error = ErrorCode.producer_fenced
        if expected == (t.producer_id, t.producer_epoch) and t.state == "Ongoing":
            self.txns[tid] = replace(t, state="PrepareAbort", producer_epoch=t.producer_epoch + 1)
            error = ErrorCode.concurrent_transactions
        return init_response.InitProducerIdResponse(
            throttle_time=i32Timedelta.parse(timedelta(0)), error_code=error,
            producer_id=ProducerId(-1), producer_epoch=i16(-1))


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    fake = FakeCluster()
    monkeypatch.setattr(kafka, "broker_addresses", fake.addresses)
    monkeypatch.setattr(kafka, "exchange", fake.exchange)
    monkeypatch.setattr(kafka, "admin_client", lambda: None)
    return fake


def test_described_transaction_is_shown_without_the_tenant_prefix() -> None:
    described = wire.DescribedTransaction(0, "acme.tx", "Ongoing", 1000, 5000, 7, 2,
                                          (("acme.orders", 0),))
    shown = open_transaction(described, "acme.", 1, now_ms=7500)
    assert (shown.transactional_id, shown.partitions, shown.age_s) == ("tx", (("orders", 0),), 2.5)
    assert shown.hanging  # 2.5 s old with a 1 s timeout
    assert open_transaction(replace(described, start_time_ms=-1), "acme.", 1, 0).age_s is None


@pytest.mark.django_db
def test_rest_lists_the_tenants_open_transactions_only(cluster: FakeCluster, acme: Tenant,
                                                       globex: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    answer = admin_client_for(acme).get("/api/v1/tenants/acme/transactions/").json()
    (txn,) = answer["transactions"]
    assert answer["errors"] == []
    assert (txn["transactional_id"], txn["state"], txn["producer_id"], txn["producer_epoch"],
            txn["timeout_ms"], txn["partitions"], txn["coordinator"], txn["hanging"]) == (
        "orders-tx", "Ongoing", 7, 2, 60000, [["orders", 0], ["orders", 1]], 1, True)
    assert 89 < txn["age_s"] < 200
    other = admin_client_for(globex)
    assert other.get("/api/v1/tenants/acme/transactions/").status_code == 404
    assert [t["transactional_id"] for t in other.get("/api/v1/tenants/globex/transactions/").json()[
        "transactions"]] == ["ledger-tx"]


@pytest.mark.django_db
def test_slow_or_down_brokers_give_a_clear_answer_never_a_500(cluster: FakeCluster, acme: Tenant,
                                                              admin_client_for, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    cluster.down = {2}
    answer = client.get("/api/v1/tenants/acme/transactions/").json()
    assert len(answer["transactions"]) == 1 and "broker 2 did not answer" in answer["errors"][0]

    def no_metadata(_admin: object = None) -> dict:
        raise kafka.KafkaRequestFailed("metadata: no answer within 5 s")

    monkeypatch.setattr(kafka, "broker_addresses", no_metadata)
    response = client.get("/api/v1/tenants/acme/transactions/")
    assert response.status_code == 503 and "did not answer" in response.json()["detail"]
    page = client.get("/t/acme/transactions/")
    assert page.status_code == 200 and 'id="brokers-error"' in page.content.decode()
    aborted = client.post("/api/v1/tenants/acme/transactions/orders-tx/abort/",
                          {"producer_id": 7, "producer_epoch": 2}, content_type="application/json")
    assert aborted.status_code == 503 and not cluster.inits


@pytest.mark.django_db
def test_abort_names_the_producer_epoch_and_is_audited(cluster: FakeCluster, acme: Tenant,
                                                       admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    url = "/api/v1/tenants/acme/transactions/orders-tx/abort/"
    stale = client.post(url, {"producer_id": 7, "producer_epoch": 1}, content_type="application/json")
    assert stale.status_code == 409 and not cluster.inits
    response = client.post(url, {"producer_id": 7, "producer_epoch": 2},
                           content_type="application/json")
    assert response.status_code == 202, response.content
    assert cluster.inits == [("acme.orders-tx", 7, 2)]
    assert cluster.txns["acme.orders-tx"].state == "PrepareAbort"
    event = AuditEvent.objects.get(action="transaction.abort")
    assert (event.tenant, event.target, event.details["producer_epoch"]) == (acme, "acme.orders-tx", 2)
    assert event.details["partitions"] == ["acme.orders-0", "acme.orders-1"]
    again = client.post(url, {"producer_id": 7, "producer_epoch": 2}, content_type="application/json")
    assert again.status_code == 409  # now PrepareAbort with epoch 3: not the one named
    cluster.txns["acme.done-tx"] = replace(cluster.txns["acme.done-tx"], state="PrepareCommit")
    committing = client.post("/api/v1/tenants/acme/transactions/done-tx/abort/",
                             {"producer_id": 8, "producer_epoch": 0}, content_type="application/json")
    assert committing.status_code == 409 and "already ending" in committing.json()["detail"]
    assert cluster.inits == [("acme.orders-tx", 7, 2)]
    missing = client.post("/api/v1/tenants/acme/transactions/nope/abort/",
                          {"producer_id": 1, "producer_epoch": 0}, content_type="application/json")
    assert missing.status_code == 409


@pytest.mark.django_db
def test_read_only_users_and_other_tenants_cannot_abort(cluster: FakeCluster, acme: Tenant,
                                                        globex: Tenant, admin_client_for,
                                                        django_user_model) -> None:  # type: ignore[no-untyped-def]
    from tenants import services
    viewer = django_user_model.objects.create_user("viewer", password="pw")
    services.create_principal(None, acme, name="viewer", kind=Principal.USER,
                              role=Principal.READ_ONLY, user=viewer)
    read_only = Client()
    read_only.force_login(viewer)
    body = {"producer_id": 7, "producer_epoch": 2}
    assert read_only.get("/api/v1/tenants/acme/transactions/").status_code == 200
    assert read_only.post("/api/v1/tenants/acme/transactions/orders-tx/abort/", body,
                          content_type="application/json").status_code == 403
    assert read_only.post("/t/acme/transactions/orders-tx/abort/",
                          {**body, "confirm": "orders-tx"}).status_code == 403
    page = read_only.get("/t/acme/transactions/").content.decode()
    assert 'data-transactional-id="orders-tx"' in page and "Abort…" not in page
    confirm = read_only.get("/t/acme/transactions/orders-tx/abort/?producer_id=7&producer_epoch=2")
    assert 'name="confirm"' not in confirm.content.decode()
    other = admin_client_for(globex)
    assert other.post("/api/v1/tenants/acme/transactions/orders-tx/abort/", body,
                      content_type="application/json").status_code == 404
    assert other.post("/t/acme/transactions/orders-tx/abort/",
                      {**body, "confirm": "orders-tx"}).status_code == 404
    assert not cluster.inits and not AuditEvent.objects.filter(action="transaction.abort").exists()


@pytest.mark.django_db
def test_console_abort_needs_the_typed_id(cluster: FakeCluster, acme: Tenant,
                                          operator_client: Client) -> None:
    page = operator_client.get("/t/acme/transactions/").content.decode()
    assert '<td data-field="partitions">orders-0 orders-1 </td>' in page
    assert '<td data-field="producer">7 / 2</td>' in page and "(past its timeout)" in page
    assert "done-tx" not in page and "ledger-tx" not in page and "acme." not in page
    assert "/t/acme/transactions/orders-tx/abort/?producer_id=7&amp;producer_epoch=2" in page
    confirm = operator_client.get("/t/acme/transactions/orders-tx/abort/?producer_id=7&producer_epoch=2")
    assert confirm.status_code == 200 and 'name="confirm"' in confirm.content.decode()
    wrong = operator_client.post("/t/acme/transactions/orders-tx/abort/",
                                 {"producer_id": 7, "producer_epoch": 2, "confirm": "orders"})
    assert wrong.status_code == 400 and not cluster.inits
    done = operator_client.post("/t/acme/transactions/orders-tx/abort/",
                                {"producer_id": 7, "producer_epoch": 2, "confirm": "orders-tx"})
    assert done.status_code == 302 and cluster.inits == [("acme.orders-tx", 7, 2)]
    assert AuditEvent.objects.get(action="transaction.abort").actor is not None


@pytest.mark.django_db
def test_openapi_documents_transactions_without_warnings(tmp_path: Path) -> None:
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--file", str(target))
    schema = target.read_text()
    assert "/api/v1/tenants/{tenant_slug}/transactions/{transactional_id}/abort/:" in schema
    for name in ("producer_epoch", "hanging", "coordinator", "age_s"):
        assert f"{name}:" in schema


def test_read_committed_lag_stops_at_the_last_stable_offset() -> None:
    from dashboard.lag import PartitionOffsets, evaluate_group, group_lag_from_json, group_lag_to_json
    observed = [PartitionOffsets("orders", 0, 10, 0, 50, last_stable=30),
                PartitionOffsets("orders", 1, None, 5, 20, last_stable=5),
                PartitionOffsets("orders", 2, 10, 0, 50)]  # LSO not read
    group = evaluate_group(None, observed, True, now=1000.0)
    assert [(p.lag, p.read_committed_lag) for p in group.partitions] == [(40, 20), (15, 0), (40, None)]
    stored = group_lag_to_json(group)
    assert [p["read_committed_lag"] for p in stored["partitions"]] == [20, 0, None]
    assert group_lag_from_json(stored) == group
    for p in stored["partitions"]:  # rows stored before the LSO was read
        del p["last_stable"], p["read_committed_lag"]
    assert all(p.read_committed_lag is None for p in group_lag_from_json(stored).partitions)
