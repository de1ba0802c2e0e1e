"""The tenancy guard and table, without sockets: name mapping in and out, sentinels for
denied names, whole-request gates, topic ids, listings, and the partition allowance."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import Authorizer, Principal, TenantNamespace
from brokerd.server.handlers import API_TABLE
from brokerd.server.tenancy import ApiNames, Guard
from brokerd.server.tenancy_rules import replication_factor_refusal

ACME = Principal("acme.app", "acme")
OWN_ID, FOREIGN_ID = uuid.uuid4(), uuid.uuid4()


class _Resources:
    def __init__(self, counts: dict[str, int] | None = None, allowance: int = 100) -> None:
        self.counts = counts if counts is not None else {"acme.orders": 3, "globex.orders": 2}
        self.allowance = allowance

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return {OWN_ID: "acme.orders", FOREIGN_ID: "globex.orders"}.get(topic_id)

    def partition_counts(self) -> dict[str, int]:
        return self.counts

    @property
    def default_partitions(self) -> int:
        return 2

    def max_partitions(self, tenant: str) -> int:
        return self.allowance

    def replication_factor(self, tenant: str) -> int:
        return 3


def _acl(operations: str, resource_type: str = "Topic", name: str = "acme.",
         pattern: str = "prefixed") -> tuple[str, str, str, bytes]:
    rules = ",".join(f'{{"principal":"User:acme.app","permissionType":"Allow",'
                     f'"operation":"{op}","host":"*"}}' for op in operations.split())
    return pattern, resource_type, name, f'{{"version":1,"acls":[{rules}]}}'.encode()


def _guard(api_key: int, *acls: tuple[str, str, str, bytes],
           resources: _Resources | None = None) -> Guard:
    authorizer = Authorizer(["User:ANONYMOUS"])
    for pattern, resource_type, name, data in acls:
        authorizer.set_resource_acls(pattern, resource_type, name, data)
    return Guard(_tenancy(api_key), ACME, TenantNamespace("acme"), "10.0.0.1", authorizer,
                 resources or _Resources())


def _tenancy(api_key: int) -> ApiNames:
    spec = API_TABLE[api_key].tenancy
    assert spec is not None
    return spec


def test_every_served_api_declares_its_tenancy() -> None:
    """Today every served API is open to tenants (within their namespace and ACLs)."""
    assert [entry.name for entry in API_TABLE.values() if entry.tenancy is None] == []


def test_produce_maps_names_in_and_out_and_answers_a_denied_topic_itself() -> None:
    guard = _guard(ApiKey.PRODUCE, _acl("Write", name="acme.orders", pattern="literal"))
    body: dict[str, Any] = {"acks": 1, "transactional_id": None, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0}]},
        {"name": "secret", "partition_data": [{"index": 0}, {"index": 1}]}]}
    assert guard.admit(body, 9) is None
    mapped, denied = body["topic_data"]
    assert mapped["name"] == "acme.orders"
    assert denied["name"].startswith("\0")  # a sentinel: no handler finds such a topic
    response = {"responses": [
        {"name": "acme.orders", "partition_responses": [{"index": 0, "error_code": 0}]},
        {"name": denied["name"], "partition_responses": [
            {"index": 0, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             "error_message": "unknown"},
            {"index": 1, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}]}]}
    guard.restore(response)
    assert response["responses"][0]["name"] == "orders"
    assert response["responses"][1]["name"] == "secret"
    assert [p["error_code"] for p in response["responses"][1]["partition_responses"]] == [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED] * 2
    assert response["responses"][1]["partition_responses"][0]["error_message"] is None


def test_a_tenant_naming_another_tenants_topic_stays_in_its_own_namespace() -> None:
    guard = _guard(ApiKey.FETCH, _acl("Read"))
    body: dict[str, Any] = {"replica_id": -1, "topics": [{"topic": "globex.orders",
                                                          "partitions": []}],
            "forgotten_topics_data": []}
    assert guard.admit(body, 12) is None
    assert body["topics"][0]["topic"] == "acme.globex.orders"


def test_metadata_listing_drops_foreign_internal_and_undescribable_topics() -> None:
    guard = _guard(ApiKey.METADATA, _acl("Describe", name="acme.orders", pattern="literal"))
    body: dict[str, Any] = {"topics": None}
    assert guard.admit(body, 12) is None
    response = {"topics": [{"name": n, "error_code": 0} for n in (
        "acme.orders", "acme.hidden", "globex.orders", "__consumer_offsets")]}
    guard.restore(response)
    assert [t["name"] for t in response["topics"]] == ["orders"]


def test_topic_ids_of_foreign_topics_become_unknown() -> None:
    guard = _guard(ApiKey.METADATA, _acl("Describe"))
    body: dict[str, Any] = {"topics": [{"topic_id": OWN_ID, "name": None},
                       {"topic_id": FOREIGN_ID, "name": None}],
            "allow_auto_topic_creation": False}
    guard.admit(body, 12)
    assert body["topics"][0]["topic_id"] == OWN_ID
    assert body["topics"][1]["topic_id"] not in (FOREIGN_ID, OWN_ID)


@pytest.mark.parametrize(("api_key", "body", "error"), [
    (ApiKey.JOIN_GROUP, {"group_id": "g"}, ErrorCode.GROUP_AUTHORIZATION_FAILED),
    (ApiKey.INIT_PRODUCER_ID, {"transactional_id": None},
     ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    (ApiKey.INIT_PRODUCER_ID, {"transactional_id": "tx"},
     ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    (ApiKey.FETCH, {"replica_id": 3, "topics": [], "forgotten_topics_data": []},
     ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
])
def test_gates_answer_the_whole_request(api_key: int, body: dict[str, Any],
                                        error: ErrorCode) -> None:
    denial = _guard(api_key).admit(body, 4)
    assert denial is not None and denial["error_code"] == error


def test_a_tenant_may_not_elect_leaders_and_sees_its_own_names_refused() -> None:
    """Leadership is the service's: even a tenant allowed everything on its topics lacks
    Alter on the cluster; each partition it named is refused under the name it sent, and
    an election of every partition gets Kafka's empty list."""
    guard = _guard(ApiKey.ELECT_LEADERS, _acl("All"))
    denial = guard.admit({"election_type": 0, "timeout_ms": 1000, "topic_partitions": [
        {"topic": "orders", "partitions": [0, 1]}]}, 2)
    failed = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    assert denial == {"throttle_time_ms": 0, "error_code": failed, "replica_election_results": [
        {"topic": "orders", "partition_result": [
            {"partition_id": p, "error_code": failed, "error_message": None} for p in (0, 1)]}]}
    everything = _guard(ApiKey.ELECT_LEADERS).admit(
        {"election_type": 1, "timeout_ms": 1000, "topic_partitions": None}, 2)
    assert everything is not None and everything["replica_election_results"] == []


def test_a_tenant_may_not_describe_the_brokers_log_dirs_or_reassignments() -> None:
    denial = _guard(ApiKey.DESCRIBE_LOG_DIRS, _acl("All")).admit({"topics": None}, 4)
    assert denial == {"throttle_time_ms": 0, "results": [],
                      "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}
    denial = _guard(ApiKey.LIST_PARTITION_REASSIGNMENTS, _acl("All")).admit(
        {"timeout_ms": 1000, "topics": [{"name": "orders", "partition_indexes": [0]}]}, 0)
    assert denial == {"throttle_time_ms": 0, "error_message": None, "topics": [],
                      "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}


def test_a_tenant_may_not_describe_client_quotas() -> None:
    """Quotas are the service's (a tenant's plan shows in its console): no tenant has
    DescribeConfigs on the cluster."""
    denial = _guard(ApiKey.DESCRIBE_CLIENT_QUOTAS, _acl("All")).admit(
        {"components": [], "strict": False}, 1)
    assert denial is not None
    assert denial["error_code"] == int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


def test_a_tenant_may_not_move_partitions() -> None:
    """Placement is the service's: even a tenant allowed everything on its topics lacks
    Alter on the cluster."""
    denial = _guard(ApiKey.ALTER_PARTITION_REASSIGNMENTS, _acl("All")).admit(
        {"timeout_ms": 1000, "allow_replication_factor_change": True, "topics": [
            {"name": "orders", "partitions": [{"partition_index": 0, "replicas": [1]}]}]}, 1)
    assert denial == {"throttle_time_ms": 0, "allow_replication_factor_change": True,
                      "error_message": None, "responses": [],
                      "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}


def test_a_tenant_may_not_write_transaction_markers() -> None:
    """Ending another producer's transaction (``kafka-transactions.sh abort``) is the
    operators': even a tenant allowed everything on its topics lacks ClusterAction, and
    each partition it named is refused."""
    denial = _guard(ApiKey.WRITE_TXN_MARKERS, _acl("All")).admit({"markers": [
        {"producer_id": 7, "producer_epoch": 0, "transaction_result": False,
         "coordinator_epoch": -1, "topics": [{"name": "orders", "partition_indexes": [0, 1]}]}]},
        1)
    failed = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    assert denial == {"markers": [{"producer_id": 7, "topics": [{"name": "orders", "partitions": [
        {"partition_index": p, "error_code": failed} for p in (0, 1)]}]}]}


def test_describe_producers_needs_read_on_each_topic_named() -> None:
    guard = _guard(ApiKey.DESCRIBE_PRODUCERS, _acl("Read", name="acme.mine", pattern="literal"))
    body: dict[str, Any] = {"topics": [{"name": "mine", "partition_indexes": [0]},
                                       {"name": "theirs", "partition_indexes": [0]}]}
    assert guard.admit(body, 0) is None
    assert body["topics"][0]["name"] == "acme.mine"
    assert body["topics"][1]["name"] != "acme.theirs"  # a sentinel: the handler finds nothing
    answer: dict[str, Any] = {"throttle_time_ms": 0, "topics": [
        {"name": topic["name"], "partitions": [
            {"partition_index": 0, "error_code": 3, "error_message": None,
             "active_producers": []}]} for topic in body["topics"]]}
    guard.restore(answer)
    assert [(t["name"], t["partitions"][0]["error_code"]) for t in answer["topics"]] == [
        ("mine", 3), ("theirs", int(ErrorCode.TOPIC_AUTHORIZATION_FAILED))]


def test_denied_offset_commit_answers_every_partition_with_client_names() -> None:
    body = {"group_id": "g", "topics": [{"name": "orders", "partitions": [
        {"partition_index": 0}, {"partition_index": 1}]}]}
    denial = _guard(ApiKey.OFFSET_COMMIT, _acl("Read")).admit(body, 8)
    assert denial == {"topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED},
        {"partition_index": 1, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}]}]}


def test_idempotent_write_is_granted_by_write_on_some_topic() -> None:
    body = {"transactional_id": None}
    assert _guard(ApiKey.INIT_PRODUCER_ID, _acl("Write")).admit(body, 4) is None


def test_describe_groups_list_of_names_and_broker_config_resources() -> None:
    guard = _guard(ApiKey.DESCRIBE_GROUPS, _acl("Describe", "Group", "acme.mine", "literal"))
    body: dict[str, Any] = {"groups": ["mine", "theirs"]}
    guard.admit(body, 5)
    assert body["groups"][0] == "acme.mine" and body["groups"][1].startswith("\0")
    response = {"groups": [{"group_id": g, "error_code": 0} for g in body["groups"]]}
    guard.restore(response)
    assert response["groups"] == [
        {"group_id": "mine", "error_code": 0},
        {"group_id": "theirs", "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}]
    configs = _guard(ApiKey.DESCRIBE_CONFIGS, _acl("All"))
    request = {"resources": [{"resource_type": 4, "resource_name": "1"},
                             {"resource_type": 2, "resource_name": "orders"}]}
    configs.admit(request, 4)
    assert request["resources"][1]["resource_name"] == "acme.orders"
    answer = {"results": [dict(r, error_code=0) for r in request["resources"]]}
    configs.restore(answer)
    assert [(r["resource_name"], r["error_code"]) for r in answer["results"]] == [
        ("1", ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ("orders", 0)]


def test_create_topics_stops_at_the_partition_allowance() -> None:
    resources = _Resources(allowance=8)  # acme owns 3 already
    guard = _guard(ApiKey.CREATE_TOPICS, _acl("Create"), resources=resources)
    body = {"topics": [
        {"name": "a", "num_partitions": 4, "replication_factor": -1, "assignments": []},
        {"name": "b", "num_partitions": 2, "replication_factor": 3,
         "assignments": []},  # 3 + 4 + 2 > 8
        {"name": "c", "num_partitions": -1, "replication_factor": -1,
         "assignments": []}]}  # default 2 -> 9 > 8
    guard.admit(body, 7)
    assert body["topics"][0]["name"] == "acme.a"
    response = {"topics": [{"name": t["name"], "error_code": 0} for t in body["topics"]]}
    guard.restore(response)
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [
        ("a", 0), ("b", ErrorCode.POLICY_VIOLATION), ("c", ErrorCode.POLICY_VIOLATION)]


def test_create_topics_gets_the_plans_replication_factor_and_refuses_others() -> None:
    guard = _guard(ApiKey.CREATE_TOPICS, _acl("Create"))
    body = {"topics": [
        {"name": "dflt", "num_partitions": 1, "replication_factor": -1, "assignments": []},
        {"name": "one", "num_partitions": 1, "replication_factor": 1, "assignments": []},
        {"name": "three", "num_partitions": 1, "replication_factor": 3, "assignments": []}]}
    guard.admit(body, 7)
    assert body["topics"][0]["replication_factor"] == 3  # -1 becomes the plan's factor
    response: dict[str, Any] = {"topics": [
        {"name": t["name"], "error_code": 0, "error_message": None} for t in body["topics"]]}
    guard.restore(response)
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [
        ("dflt", 0), ("one", ErrorCode.POLICY_VIOLATION), ("three", 0)]
    assert "factor 3" in response["topics"][1]["error_message"]


def test_metadata_auto_creation_gets_the_plans_replication_factor() -> None:
    guard = _guard(ApiKey.METADATA, _acl("Create Describe"))
    body: dict[str, Any] = {"topics": [{"name": "fresh"}, {"name": "orders"}],
                            "allow_auto_topic_creation": True}
    guard.admit(body, 12)
    assert body["topics"][0] == {"name": "acme.fresh", "replication_factor": 3}
    assert "replication_factor" not in body["topics"][1]  # exists: nothing to create


@pytest.mark.parametrize(("requested", "assignments", "refused"), [
    (-1, [], False), (3, [], False), (1, [], True), (5, [], True),
    (-1, [{"broker_ids": [1, 2, 3]}, {"broker_ids": [2, 3, 1]}], False),
    (-1, [{"broker_ids": [1, 2, 3]}, {"broker_ids": [2]}], True)])
def test_replication_factor_refusal(requested: int, assignments: list[dict[str, Any]],
                                    refused: bool) -> None:
    refusal = replication_factor_refusal(requested, assignments, 3)
    assert (refusal is not None) == refused
    if refusal is not None:
        assert "this plan's topics have replication factor 3" in refusal


def test_operator_namespace_is_the_identity() -> None:
    authorizer = Authorizer(["User:ops"])
    guard = Guard(_tenancy(ApiKey.METADATA), Principal("ops", None), TenantNamespace(None),
                  "h", authorizer, _Resources())
    body = {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": False}
    original = copy.deepcopy(body)
    assert guard.admit(body, 12) is None and body == original
    response = {"topics": [{"name": "__consumer_offsets", "error_code": 0}]}
    guard.restore(response)
    assert response["topics"][0]["name"] == "__consumer_offsets"


def test_offset_commit_withholds_denied_topics_from_the_handler() -> None:
    guard = _guard(ApiKey.OFFSET_COMMIT, _acl("Read", "Group", "acme.g", "literal"),
                   _acl("Read", name="acme.mine", pattern="literal"))
    body: dict[str, Any] = {"group_id": "g", "topics": [
        {"name": "mine", "partitions": [{"partition_index": 0, "committed_offset": 5}]},
        {"name": "theirs", "partitions": [{"partition_index": 3, "committed_offset": 9}]}]}
    assert guard.admit(body, 8) is None
    assert [t["name"] for t in body["topics"]] == ["acme.mine"]  # all the handler sees
    response = {"topics": [{"name": "acme.mine", "partitions": [
        {"partition_index": 0, "error_code": 0}]}]}
    guard.restore(response)
    assert response["topics"] == [
        {"name": "mine", "partitions": [{"partition_index": 0, "error_code": 0}]},
        {"name": "theirs", "partitions": [
            {"partition_index": 3, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}]}]


@given(st.lists(st.text(max_size=30), min_size=1, max_size=5))
def test_whatever_a_tenant_names_stays_inside_its_namespace(names: list[str]) -> None:
    """Hostile names (other tenants' prefixes, dots, NULs, internal names) only ever reach
    the handler as ``acme.<name>`` or as a sentinel, and come back as they were sent."""
    guard = _guard(ApiKey.LIST_OFFSETS, _acl("Describe", name="acme.x"))
    body: dict[str, Any] = {"replica_id": -1,
                            "topics": [{"name": n, "partitions": []} for n in names]}
    guard.admit(body, 7)
    sent = [t["name"] for t in body["topics"]]
    assert all(n.startswith("acme.x") or n.startswith("\0") for n in sent)
    assert all(n.startswith("acme.") for n in sent if not n.startswith("\0"))
    response = {"topics": [{"name": n, "partitions": [], "error_code": 0} for n in sent]}
    guard.restore(response)
    assert [t["name"] for t in response["topics"]] == names
