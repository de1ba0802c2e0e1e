"""Reassignment formats and the completion rule (pure, no ZooKeeper)."""

from __future__ import annotations

import json

import pytest

from tenants import reassignment as r


def test_request_payload_is_kafkas_format_and_round_trips() -> None:
    payload = r.reassign_payload({("acme.orders", 1): [3, 1, 2], ("acme.orders", 0): [2, 3, 1]})
    assert json.loads(payload) == {"version": 1, "partitions": [
        {"topic": "acme.orders", "partition": 0, "replicas": [2, 3, 1]},
        {"topic": "acme.orders", "partition": 1, "replicas": [3, 1, 2]}]}
    assert r.parse_reassign(payload) == {("acme.orders", 0): [2, 3, 1], ("acme.orders", 1): [3, 1, 2]}
    assert r.parse_reassign(None) == {}


def test_merge_adds_other_partitions_and_refuses_a_moving_one() -> None:
    pending = {("t", 0): [1, 2]}
    assert r.merge_moves(pending, {("t", 1): [2, 3]}) == {("t", 0): [1, 2], ("t", 1): [2, 3]}
    assert r.merge_moves(pending, {("t", 0): [1, 2]}) == pending  # a retried write
    with pytest.raises(r.MoveConflict, match="t-0 is already being moved"):
        r.merge_moves(pending, {("t", 0): [3, 2]})


def test_throttle_is_set_and_removed_keeping_other_broker_configs() -> None:
    assert r.throttled_config({"log.cleaner.threads": "2"}, 1000) == {
        "log.cleaner.threads": "2", r.THROTTLE_KEY: "1000"}
    assert r.throttled_config({r.THROTTLE_KEY: "1000"}, None) == {}


def test_election_payload() -> None:
    assert json.loads(r.election_payload([("b", 1), ("a", 0), ("a", 0)])) == {
        "version": 1, "partitions": [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 1}]}


def _state(replicas, adding=(), removing=(), isr=(), leader=1, requested=None):  # type: ignore[no-untyped-def]
    topic = {"partitions": {"0": replicas} if replicas is not None else {},
             "adding_replicas": {"0": list(adding)} if adding else {},
             "removing_replicas": {"0": list(removing)} if removing else {}}
    state = {"leader": leader, "leader_epoch": 4, "isr": list(isr)}
    return r.partition_state(json.dumps(topic).encode(), json.dumps(state).encode(), 0, requested)


def test_judge_follows_a_move_to_completion() -> None:
    target = [4, 2, 3]
    adding = _state([4, 2, 3, 1], adding=[4], removing=[1], isr=[1, 2, 3], requested=target)
    verdict = r.judge(adding, target)
    assert not verdict.done and not verdict.failed
    assert verdict.progress.startswith("adding [4]; waiting for [4] to join the ISR")
    removing = _state([4, 2, 3, 1], removing=[1], isr=[1, 2, 3, 4], leader=4, requested=target)
    assert r.judge(removing, target).progress.startswith("removing [1]")
    done = r.judge(_state([4, 2, 3], isr=[4, 2, 3], leader=4), target)
    assert done.done and done.progress == "complete: replicas [4, 2, 3], ISR [4, 2, 3], leader 4"


def test_judge_fails_a_move_the_controller_dropped_or_a_vanished_partition() -> None:
    dropped = r.judge(_state([1, 2, 3], isr=[1, 2, 3]), [4, 2, 3])
    assert dropped.failed and "dropped" in dropped.progress
    # still in the request: the controller has not finished, whatever the assignment says
    assert not r.judge(_state([4, 2, 3], requested=[4, 2, 3]), [4, 2, 3]).done
    assert r.judge(_state(None), [1]).failed
