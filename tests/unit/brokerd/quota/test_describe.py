"""DescribeClientQuotas filters over the broker's quota entities (KIP-546)."""

from __future__ import annotations

import pytest

from brokerd.quota.describe import (
    CLIENT_ID,
    IP,
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    USER,
    Component,
    InvalidFilter,
    describe,
)
from brokerd.quota.resolution import DEFAULT_ENTITY, QuotaType

ENTITIES = {
    ("alice", None): {QuotaType.PRODUCE: 1000.0},
    ("alice", "app"): {QuotaType.FETCH: 2000.0, QuotaType.PRODUCE: 500.0},
    (DEFAULT_ENTITY, None): {QuotaType.REQUEST: 50.0},
    (None, "app"): {QuotaType.PRODUCE: 300.0},
    (None, DEFAULT_ENTITY): {QuotaType.FETCH: 100.0},
}


def entities(components: list[Component], strict: bool = False) -> list[list[tuple]]:
    return [entity for entity, _ in describe(ENTITIES, components, strict)]


def test_no_components_lists_every_entity_with_its_values_and_defaults_unnamed() -> None:
    assert describe(ENTITIES, [], strict=False) == [
        ([(CLIENT_ID, None)], {"consumer_byte_rate": 100.0}),
        ([(CLIENT_ID, "app")], {"producer_byte_rate": 300.0}),
        ([(USER, None)], {"request_percentage": 50.0}),
        ([(USER, "alice")], {"producer_byte_rate": 1000.0}),
        ([(USER, "alice"), (CLIENT_ID, "app")],
         {"consumer_byte_rate": 2000.0, "producer_byte_rate": 500.0}),
    ]
    assert describe(ENTITIES, [], strict=True) == []


def test_exact_default_and_specified_matches() -> None:
    alice = Component(USER, MATCH_EXACT, "alice")
    assert entities([alice]) == [[(USER, "alice")], [(USER, "alice"), (CLIENT_ID, "app")]]
    assert entities([alice], strict=True) == [[(USER, "alice")]]
    assert entities([Component(USER, MATCH_DEFAULT, None)]) == [[(USER, None)]]
    assert entities([Component(CLIENT_ID, MATCH_SPECIFIED, None)]) == [
        [(CLIENT_ID, "app")], [(USER, "alice"), (CLIENT_ID, "app")]]
    assert entities([alice, Component(CLIENT_ID, MATCH_EXACT, "app")], strict=True) == [
        [(USER, "alice"), (CLIENT_ID, "app")]]
    assert entities([Component(IP, MATCH_SPECIFIED, None)]) == []  # no ip quotas here


@pytest.mark.parametrize(("components", "reason"), [
    ([Component(USER, MATCH_EXACT, "a"), Component(USER, MATCH_DEFAULT, None)], "duplicate"),
    ([Component("group", MATCH_EXACT, "g")], "custom entity type"),
    ([Component(USER, 7, None)], "match type"),
    ([Component(USER, MATCH_EXACT, None)], "needs a name"),
])
def test_filters_kafka_refuses(components: list[Component], reason: str) -> None:
    with pytest.raises(InvalidFilter, match=reason):
        describe(ENTITIES, components, strict=False)
