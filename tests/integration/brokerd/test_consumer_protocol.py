"""KIP-848 consumer groups end to end: real broker process, confluent-kafka (librdkafka)
consumers with ``group.protocol=consumer``.

- Three members split six partitions 2+2+2 with the broker's assignor and read every record
  once; a SIGKILLed member's partitions move to the survivors within the broker's session
  timeout (``group.consumer.session.timeout.ms``), every record is read at least once, and
  committed offsets, sampled over the wire throughout, never go backwards.
- A static member (``group.instance.id``) restarted within the session timeout gets its own
  partitions back and nobody else's assignment changes.  (It must have closed: as in Kafka,
  an instance id whose previous member did not leave is refused with UNRELEASED_INSTANCE_ID
  until that member's session expires.)
- Classic and consumer-protocol groups live side by side; ListGroups, DescribeGroups,
  ConsumerGroupDescribe, OffsetFetch and DeleteGroups serve both; a classic group moves to
  the new protocol by rolling restart without losing its committed offsets.
- Partitions added to a subscribed topic, and new topics matching a regular expression,
  are assigned without any client action.
- After a broker crash the group is replayed from ``__consumer_offsets``: the same members
  keep their partitions and epochs and every record is read exactly once.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import pytest

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.test_groups import (
    PARTITIONS,
    covers_evenly,
    create_topic,
    shares,
    values_read,
)
from tests.integration.brokerd.test_groups_harness import (
    CommittedOffsetsWatch,
    ConsumerProcess,
    consume,
    produce,
    wait_for,
)

pytestmark = pytest.mark.integration

SESSION_S = 6.0
HEARTBEAT_MS = 500
# Survivors are given the partitions at their first heartbeat after the expiry.
REASSIGN_SLACK_S = 3.0
BROKER_PROPS = {"group_consumer_session_timeout_ms": str(int(SESSION_S * 1000)),
                "group_consumer_heartbeat_interval_ms": str(HEARTBEAT_MS),
                "offsets_topic_num_partitions": "10",
                "group_initial_rebalance_delay_ms": "0"}
CLIENT = "confluent-consumer"


def describe(wire: WireClient, group: str) -> dict:
    (described,) = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {
        "group_ids": [group], "include_authorized_operations": False})["groups"]
    return described


def test_three_members_split_six_partitions_and_survive_a_killed_member(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(**BROKER_PROPS)
    topic, group = "orders-848", "billing-848"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    consumers = [ConsumerProcess(CLIENT, broker.bootstrap, topic, group).start()
                 for _ in range(3)]
    wire = WireClient(broker.port)
    try:
        took = wait_for(lambda: covers_evenly(consumers), 40,
                        f"2+2+2 partitions, got {shares(consumers)}")
        described = describe(wire, group)
        assert described["error_code"] == ErrorCode.NONE
        assert described["group_state"] == "Stable" and described["assignor_name"] == "uniform"
        assert len(described["members"]) == 3
        assert {m["member_epoch"] for m in described["members"]} == {
            described["assignment_epoch"]}
        with CommittedOffsetsWatch(broker.port, group, topic, PARTITIONS) as watch:
            first = range(0, 1200)
            produce(broker.bootstrap, topic, PARTITIONS, first)
            wait_for(lambda: sum(values_read(consumers).values()) >= len(first), 20,
                     "the first 1200 records")
            time.sleep(0.3)
            assert values_read(consumers) == Counter(f"m-{i}" for i in first)  # exactly once

            victim, survivors = consumers[0], consumers[1:]
            victim.kill()
            killed_at = time.monotonic()
            second = range(1200, 2400)
            produce(broker.bootstrap, topic, PARTITIONS, second)
            wait_for(lambda: covers_evenly(survivors), SESSION_S + REASSIGN_SLACK_S,
                     f"3+3 partitions after the kill, got {shares(survivors)}")
            moved_after = time.monotonic() - killed_at
            wait_for(lambda: set(values_read(survivors)) >= {f"m-{i}" for i in second}, 20,
                     "every record of the second batch")
            assert set(values_read(consumers)) == {f"m-{i}" for i in range(2400)}
            wait_for(lambda: bool(watch.samples) and watch.samples[-1] == dict.fromkeys(
                range(PARTITIONS), 400), 10, "all offsets committed")
        watch.assert_never_backwards(consumers)
        print(f"2+2+2 after {took:.2f}s; partitions moved {moved_after:.2f}s after the kill "
              f"(session timeout {SESSION_S}s)")
    finally:
        wire.close()
        for consumer in consumers:
            consumer.stop()


def test_static_member_restarted_in_time_gets_its_partitions_back(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(**BROKER_PROPS)
    topic, group = "static-848", "static-group-848"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    consumers = [ConsumerProcess(CLIENT, broker.bootstrap, topic, group,
                                 instance_id=f"instance-{i}").start() for i in range(3)]
    wire = WireClient(broker.port)
    try:
        wait_for(lambda: covers_evenly(consumers), 40, f"2+2+2, got {shares(consumers)}")
        before = shares(consumers)
        others = [len(c.assignments) for c in consumers[1:]]
        epoch_before = describe(wire, group)["group_epoch"]
        consumers[0].close()  # a clean close: leaves with epoch -2, keeping its partitions
        restarted = ConsumerProcess(CLIENT, broker.bootstrap, topic, group,
                                    instance_id="instance-0").start()
        consumers[0] = restarted
        wait_for(lambda: restarted.assignment == before[0], SESSION_S,
                 f"instance-0 back with {before[0]}, got {restarted.assignment}")
        time.sleep(2 * HEARTBEAT_MS / 1000)  # a moved partition would show by now
        assert shares(consumers)[1:] == before[1:]
        assert [len(c.assignments) for c in consumers[1:]] == others  # no callbacks at all
        described = describe(wire, group)
        assert described["group_epoch"] == epoch_before  # no rebalance happened
        assert sorted(m["instance_id"] for m in described["members"]) == [
            "instance-0", "instance-1", "instance-2"]
    finally:
        wire.close()
        for consumer in consumers:
            consumer.stop()


def test_classic_and_consumer_groups_side_by_side(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(**BROKER_PROPS)
    create_topic(broker.bootstrap, "side", 2)
    produce(broker.bootstrap, "side", 2, range(40))
    records, _ = consume(broker.bootstrap, "side", "classic-side", 40)
    assert len(records) == 40
    member = ConsumerProcess(CLIENT, broker.bootstrap, "side", "new-side").start()
    wire = WireClient(broker.port)
    try:
        wait_for(lambda: len(member.records) >= 40, 30, "the consumer group's 40 records")
        wait_for(lambda: CommittedOffsetsWatch(broker.port, "new-side", "side", 2).fetch(wire)
                 == {0: 20, 1: 20}, 10, "the consumer group's commits")
        listed = {g["group_id"]: g for g in wire.request(ApiKey.LIST_GROUPS, 5, {
            "states_filter": [], "types_filter": []})["groups"]}
        assert listed["classic-side"]["group_state"] == "Empty"
        assert listed["classic-side"]["group_type"] == "classic"
        assert listed["new-side"]["protocol_type"] == "consumer"
        assert listed["new-side"]["group_state"] == "Stable"
        assert listed["new-side"]["group_type"] == "consumer"
        (classic_view,) = wire.request(ApiKey.DESCRIBE_GROUPS, 5, {
            "groups": ["new-side"], "include_authorized_operations": False})["groups"]
        assert classic_view["group_state"] == "Stable" and len(classic_view["members"]) == 1
        assert describe(wire, "classic-side")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        assert CommittedOffsetsWatch(broker.port, "classic-side", "side", 2).fetch(wire) == {
            0: 20, 1: 20}
        refused = wire.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["new-side"]})
        assert refused["results"][0]["error_code"] == ErrorCode.NON_EMPTY_GROUP
        member.stop()
        # A killed member is expired after the session timeout; then the group can go.
        wait_for(lambda: describe(wire, "new-side")["group_state"] == "Empty",
                 SESSION_S + REASSIGN_SLACK_S, "the consumer group to become empty")
        deleted = wire.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["new-side",
                                                                          "classic-side"]})
        assert [r["error_code"] for r in deleted["results"]] == [0, 0]
        assert describe(wire, "new-side")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    finally:
        wire.close()
        member.stop()


def test_classic_group_upgrades_as_members_restart_with_the_new_protocol(
        start_broker: Callable[..., BrokerProcess]) -> None:
    """A rolling restart from classic to ``group.protocol=consumer``: consumption goes on
    throughout and resumes from the committed offsets, so nothing is lost or read twice
    except around the restarts (at least once)."""
    broker = start_broker(**BROKER_PROPS)
    topic, group = "upgrade-848", "upgrade-group"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    members = [ConsumerProcess("confluent", broker.bootstrap, topic, group).start()
               for _ in range(3)]
    wire = WireClient(broker.port)
    try:
        wait_for(lambda: covers_evenly(members), 40, f"classic 2+2+2, got {shares(members)}")
        with CommittedOffsetsWatch(broker.port, group, topic, PARTITIONS) as watch:
            produce(broker.bootstrap, topic, PARTITIONS, range(0, 600))
            wait_for(lambda: sum(values_read(members).values()) >= 600, 20, "600 records")
            old = list(members)
            for index in range(3):
                members[index].close()
                members[index] = ConsumerProcess(CLIENT, broker.bootstrap, topic,
                                                 group).start()
                produce(broker.bootstrap, topic, PARTITIONS,
                        range(600 + 300 * index, 900 + 300 * index))
                time.sleep(1.0)
            wait_for(lambda: covers_evenly(members), 30,
                     f"consumer-protocol 2+2+2, got {shares(members)}")
            listed = {g["group_id"]: g for g in wire.request(ApiKey.LIST_GROUPS, 4, {
                "states_filter": []})["groups"]}
            assert describe(wire, group)["error_code"] == ErrorCode.NONE
            assert listed[group]["protocol_type"] == "consumer"
            produce(broker.bootstrap, topic, PARTITIONS, range(1500, 1800))
            every = {f"m-{i}" for i in range(1800)}
            wait_for(lambda: set(values_read(old + members)) >= every, 30, "every record")
            wait_for(lambda: bool(watch.samples) and watch.samples[-1] == dict.fromkeys(
                range(PARTITIONS), 300), 15, "all offsets committed")
        watch.assert_never_backwards(old + members)
        # Resumed from the classic group's commits: the first 600 were not read again.
        assert not {f"m-{i}" for i in range(600)} & set(values_read(members))
    finally:
        wire.close()
        for member in members:
            member.stop()


def test_added_partitions_and_new_regex_matches_are_picked_up(
        start_broker: Callable[..., BrokerProcess]) -> None:
    """No client action: partitions added to a subscribed topic, and a new topic matching a
    member's regular expression, are assigned at the members' next heartbeats."""
    from confluent_kafka.admin import AdminClient, NewPartitions  # type: ignore[attr-defined]

    broker = start_broker(**BROKER_PROPS)
    create_topic(broker.bootstrap, "grow-848", 2)
    create_topic(broker.bootstrap, "metrics-a", 2)
    listed = [ConsumerProcess(CLIENT, broker.bootstrap, "grow-848", "grow-group").start()
              for _ in range(2)]
    pattern = ConsumerProcess(CLIENT, broker.bootstrap, "^metrics-.*", "regex-group").start()
    wire = WireClient(broker.port)
    try:
        wait_for(lambda: sorted(p for m in listed for p in m.assignment) == [0, 1], 30,
                 lambda: f"two partitions over two members, got {shares(listed)}")
        wait_for(lambda: len(pattern.assignment) == 2, 30, "metrics-a's partitions")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_partitions([NewPartitions("grow-848", 4)])["grow-848"].result(10)
        create_topic(broker.bootstrap, "metrics-b", 3)
        wait_for(lambda: sorted(p for m in listed for p in m.assignment) == [0, 1, 2, 3]
                 and {len(m.assignment) for m in listed} == {2}, 15,
                 lambda: f"four partitions 2+2, got {shares(listed)}")

        def regex_assignment() -> dict[str, list[int]]:
            (member,) = describe(wire, "regex-group")["members"]
            assert member["subscribed_topic_regex"] == "(^metrics-.*)"  # as librdkafka sends it
            return {row["topic_name"]: row["partitions"]
                    for row in member["assignment"]["topic_partitions"]}

        wait_for(lambda: regex_assignment() == {"metrics-a": [0, 1], "metrics-b": [0, 1, 2]},
                 15, lambda: f"metrics-a and metrics-b, got {regex_assignment()}")
        # The client hears of its new target at its next heartbeat and takes it once its
        # metadata knows metrics-b, a moment after the coordinator's describe shows it.
        wait_for(lambda: pattern.assignment == [0, 1, 2], 15,  # by index, both topics
                 lambda: f"the client's own assignment, got {pattern.assignment}")
    finally:
        wire.close()
        for consumer in [*listed, pattern]:
            consumer.stop()


def test_consumer_group_moves_back_to_classic_by_rolling_restart(
        start_broker: Callable[..., BrokerProcess]) -> None:
    """The way back: classic members wait (retriable COORDINATOR_LOAD_IN_PROGRESS) while
    consumer-protocol members remain, and take over with the committed offsets."""
    broker = start_broker(**BROKER_PROPS)
    topic, group = "downgrade-848", "downgrade-group"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    members = [ConsumerProcess(CLIENT, broker.bootstrap, topic, group).start()
               for _ in range(3)]
    wire = WireClient(broker.port)
    try:
        wait_for(lambda: covers_evenly(members), 40, f"2+2+2, got {shares(members)}")
        produce(broker.bootstrap, topic, PARTITIONS, range(0, 600))
        wait_for(lambda: sum(values_read(members).values()) >= 600, 20, "600 records")
        old = list(members)
        for index in range(3):
            members[index].close()
            members[index] = ConsumerProcess("confluent", broker.bootstrap, topic,
                                             group).start()
        produce(broker.bootstrap, topic, PARTITIONS, range(600, 1200))
        wait_for(lambda: covers_evenly(members), 40, f"classic 2+2+2, got {shares(members)}")
        every = {f"m-{i}" for i in range(1200)}
        wait_for(lambda: set(values_read(old + members)) >= every, 30, "every record")
        assert not {f"m-{i}" for i in range(600)} & set(values_read(members))
        listed = {g["group_id"]: g for g in wire.request(ApiKey.LIST_GROUPS, 5, {
            "states_filter": [], "types_filter": []})["groups"]}
        assert listed[group]["group_type"] == "classic"
    finally:
        wire.close()
        for member in members:
            member.stop()


def test_members_carry_on_across_a_broker_restart(
        start_broker: Callable[..., BrokerProcess]) -> None:
    """The coordinator's state is replayed from ``__consumer_offsets`` after a crash: the
    same members keep the same partitions at the same epochs, nobody is reassigned, and
    consumption resumes from the committed offsets."""
    broker = start_broker(**BROKER_PROPS)
    topic, group = "restart-848", "restart-group"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    consumers = [ConsumerProcess(CLIENT, broker.bootstrap, topic, group).start()
                 for _ in range(3)]
    try:
        wait_for(lambda: covers_evenly(consumers), 40, f"2+2+2, got {shares(consumers)}")
        produce(broker.bootstrap, topic, PARTITIONS, range(0, 600))
        wait_for(lambda: sum(values_read(consumers).values()) >= 600, 20, "600 records")
        wire = WireClient(broker.port)
        wait_for(lambda: CommittedOffsetsWatch(broker.port, group, topic, PARTITIONS).fetch(
            wire) == dict.fromkeys(range(PARTITIONS), 100), 10, "commits of the 600")
        before = describe(wire, group)
        wire.close()
        assignments = [len(c.assignments) for c in consumers]
        broker.kill()
        broker.start()
        produce(broker.bootstrap, topic, PARTITIONS, range(600, 1200))
        wait_for(lambda: sum(values_read(consumers).values()) >= 1200, 40, "the next 600")
        wire = WireClient(broker.port)
        after = describe(wire, group)
        wire.close()
        assert after["group_epoch"] == before["group_epoch"]
        assert sorted(m["member_id"] for m in after["members"]) == sorted(
            m["member_id"] for m in before["members"])
        assert [len(c.assignments) for c in consumers] == assignments  # no reassignment
        assert values_read(consumers) == Counter(f"m-{i}" for i in range(1200))
    finally:
        for consumer in consumers:
            consumer.stop()
