"""Kafka's ZooKeeper JSON formats: exact encodings and tolerant decoding."""

from __future__ import annotations

import json
import uuid

import pytest

from brokerd.coordination import znodes
from brokerd.coordination.assignment import AssignmentError, assign_replicas, initial_state
from brokerd.coordination.reconnect import split_connect


def test_topic_id_is_kafka_base64url_without_padding() -> None:
    topic_id = uuid.UUID("0e1b1b0c-7b3f-4d2e-9a5b-000000000001")
    text = znodes.topic_id_to_str(topic_id)
    assert len(text) == 22 and "=" not in text
    assert znodes.topic_id_from_str(text) == topic_id
    with pytest.raises(znodes.ZnodeFormatError):
        znodes.topic_id_from_str("!!")


def test_broker_registration_json() -> None:
    registration = znodes.BrokerRegistration(3, "h", 9092, ("PLAINTEXT://h:9092",), "r1", 9103)
    value = json.loads(registration.encode(1234))
    assert value == {"features": {}, "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
                     "endpoints": ["PLAINTEXT://h:9092"], "jmx_port": -1, "port": 9092,
                     "host": "h", "version": 5, "timestamp": "1234", "rack": "r1",
                     "metrics_port": 9103}
    assert znodes.BrokerRegistration.decode(3, registration.encode(1)) == registration
    # a broker without a PLAINTEXT listener writes host null / port -1
    sasl_only = b'{"version":5,"host":null,"port":-1,"endpoints":["SASL_SSL://s:9292"]}'
    decoded = znodes.BrokerRegistration.decode(4, sasl_only)
    assert (decoded.host, decoded.port) == ("s", 9292)


def test_offline_replicas_ride_in_the_registration_and_a_log_dir_event_names_the_broker() -> None:
    registration = znodes.BrokerRegistration(3, "h", 9092, ("PLAINTEXT://h:9092",),
                                             offline_replicas=(("orders", 0), ("orders", 3)))
    value = json.loads(registration.encode(1))
    assert value["offline_replicas"] == [["orders", 0], ["orders", 3]]
    assert znodes.BrokerRegistration.decode(3, registration.encode(1)) == registration
    assert json.loads(znodes.encode_log_dir_event(3)) == {"version": 1, "broker": 3, "event": 1}


def test_topic_assignment_and_state_json() -> None:
    topic_id = uuid.uuid4()
    assignment = znodes.TopicAssignment(topic_id, {1: (2, 1), 0: (1, 2)})
    value = json.loads(assignment.encode())
    assert value == {"version": 3, "topic_id": znodes.topic_id_to_str(topic_id),
                     "partitions": {"0": [1, 2], "1": [2, 1]}, "adding_replicas": {},
                     "removing_replicas": {}}
    assert znodes.TopicAssignment.decode("t", assignment.encode()) == assignment
    # version 1 topics (no id) get a stable id derived from the name
    old = b'{"version":1,"partitions":{"0":[1]}}'
    assert (znodes.TopicAssignment.decode("t", old).topic_id
            == znodes.TopicAssignment.decode("t", old).topic_id)
    state = znodes.PartitionState(leader=1, leader_epoch=4, isr=(1, 2), controller_epoch=2)
    assert json.loads(state.encode()) == {"controller_epoch": 2, "leader": 1, "version": 1,
                                          "leader_epoch": 4, "isr": [1, 2]}
    assert znodes.PartitionState.decode(state.encode(), 7) == znodes.PartitionState(
        1, 4, (1, 2), 2, 7)
    for isr in ((), (3,), (1, 2, 3)):  # formatted by hand: byte for byte json.dumps's
        state = znodes.PartitionState(leader=-1, leader_epoch=12, isr=isr, controller_epoch=9)
        assert state.encode() == json.dumps(
            {"controller_epoch": 9, "leader": -1, "version": 1, "leader_epoch": 12,
             "isr": list(isr)}, separators=(",", ":")).encode()
    for bad in (b"", b"[]", b'{"leader":1}', b'{"leader":1,"leader_epoch":0,"isr":["x"]}'):
        with pytest.raises(znodes.ZnodeFormatError):
            znodes.PartitionState.decode(bad)
    for bad in (b"", b"[]", b'{"version":3}', b'{"partitions":{"x":[1]}}'):
        with pytest.raises(znodes.ZnodeFormatError):
            znodes.TopicAssignment.decode("t", bad)


def test_configs_controller_cluster_and_producer_blocks() -> None:
    assert json.loads(znodes.encode_topic_config({"a": "1"})) == {"version": 1,
                                                                  "config": {"a": "1"}}
    assert znodes.decode_topic_config(b'{"version":1,"config":{"a":1}}') == {"a": "1"}
    assert znodes.decode_topic_config(None) == {}
    assert znodes.decode_controller(znodes.encode_controller(5, 9)) == 5
    cluster = uuid.uuid4()
    assert znodes.decode_cluster_id(znodes.encode_cluster_id(cluster)) == znodes.topic_id_to_str(
        cluster)
    first = znodes.next_producer_id_block(None, 1)
    assert (first.start, first.end) == (0, 999)
    assert json.loads(first.encode()) == {"version": 1, "broker": 1, "block_start": "0",
                                          "block_end": "999"}
    second = znodes.next_producer_id_block(znodes.ProducerIdBlock.decode(first.encode()), 2)
    assert (second.broker_id, second.start, second.end) == (2, 1000, 1999)


def test_assignment_spreads_leaders_and_never_doubles_a_replica() -> None:
    replicas = assign_replicas([3, 1, 2], range(6), 3, start=1)
    assert [r[0] for r in replicas.values()] == [2, 3, 1, 2, 3, 1]
    assert all(len(set(r)) == 3 for r in replicas.values())
    with pytest.raises(AssignmentError):
        assign_replicas([1], [0], 2)


def test_initial_state_first_live_replica_leads() -> None:
    state = initial_state((2, 1, 3), {1, 3}, controller_epoch=4)
    assert state == znodes.PartitionState(1, 0, (1, 3), 4)
    assert initial_state((2,), {1}, 1) is None


def test_split_connect() -> None:
    assert split_connect("a:1,b:2/kafka/x/") == ("a:1,b:2", "/kafka/x")
    assert split_connect("a:1") == ("a:1", "")


def test_reassignment_in_progress_round_trips_in_kafkas_keys() -> None:
    assignment = znodes.TopicAssignment(uuid.uuid4(), {0: (3, 2, 1)}, {0: (3,)}, {0: (1,)})
    value = json.loads(assignment.encode())
    assert (value["adding_replicas"], value["removing_replicas"]) == ({"0": [3]}, {"0": [1]})
    assert znodes.TopicAssignment.decode("t", assignment.encode()) == assignment


def test_admin_request_nodes() -> None:
    raw = (b'{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[3,2]},'
           b'{"topic":"b","partition":4}]}')
    requests = znodes.decode_partition_requests(raw)
    assert requests == [znodes.PartitionRequest("a", 0, (3, 2)),
                        znodes.PartitionRequest("b", 4)]
    assert znodes.decode_partition_requests(znodes.encode_partition_requests(requests)) == requests
    assert znodes.decode_partition_requests(b"") == []
    with pytest.raises(znodes.ZnodeFormatError):
        znodes.decode_partition_requests(b'{"version":1,"partitions":[{"topic":"a"}]}')


def test_controlled_shutdown_result() -> None:
    assert znodes.decode_shutdown_result(b"") is None
    assert znodes.decode_shutdown_result(znodes.encode_shutdown_result(3)) == 3


def test_an_assignment_moved_sets_replicas_and_clears_finished_moves() -> None:
    topic_id = uuid.uuid4()
    before = znodes.TopicAssignment(topic_id, {0: (1, 2), 1: (4, 1, 2), 2: (3,)},
                                    adding={1: (4,)}, removing={1: (2,)})
    after = before.moved({0: ((3, 2, 1), (3,), (1,)), 1: ((4, 1), (), ())})
    assert after == znodes.TopicAssignment(topic_id, {0: (3, 2, 1), 1: (4, 1), 2: (3,)},
                                           adding={0: (3,)}, removing={0: (1,)})
    assert before.replicas[0] == (1, 2) and before.adding == {1: (4,)}  # unchanged
