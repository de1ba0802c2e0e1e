"""Quota entity resolution: Kafka's eight levels, per-key independence, tenant plans, sharing."""

from __future__ import annotations

import pytest

from brokerd.quota import (
    InvalidQuotaConfig,
    QuotaConfigStore,
    QuotaEntityKey,
    QuotaLevel,
    QuotaType,
    TenantQuotaDefaults,
    parse_entity_path,
    parse_quota_config,
)

PRODUCE = QuotaType.PRODUCE
USER = "acme.orders"
CLIENT = "app-1"

# Every level configured with a distinct producer_byte_rate, most specific first.
ALL_LEVELS = [
    (QuotaLevel.USER_CLIENT, f"users/{USER}/clients/{CLIENT}", 1),
    (QuotaLevel.USER_DEFAULT_CLIENT, f"users/{USER}/clients/<default>", 2),
    (QuotaLevel.USER, f"users/{USER}", 3),
    (QuotaLevel.DEFAULT_USER_CLIENT, f"users/<default>/clients/{CLIENT}", 4),
    (QuotaLevel.DEFAULT_USER_DEFAULT_CLIENT, "users/<default>/clients/<default>", 5),
    (QuotaLevel.DEFAULT_USER, "users/<default>", 6),
    (QuotaLevel.CLIENT, f"clients/{CLIENT}", 7),
    (QuotaLevel.DEFAULT_CLIENT, "clients/<default>", 8),
]


def _store_with_levels(levels: list[tuple[QuotaLevel, str, int]]) -> QuotaConfigStore:
    store = QuotaConfigStore()
    for _, path, rate in levels:
        store.set_entity(path, {"producer_byte_rate": str(rate)})
    return store


@pytest.mark.parametrize("index", range(len(ALL_LEVELS)))
def test_most_specific_configured_level_wins(index: int) -> None:
    # Levels above ``index`` are absent; all below it are set: ``index`` must win.
    store = _store_with_levels(ALL_LEVELS[index:])
    level, path, rate = ALL_LEVELS[index]
    resolved = store.resolve(PRODUCE, USER, CLIENT, None)
    assert (resolved.level, resolved.limit) == (level, float(rate))
    assert resolved.describe() == f"/config/{level.value}"
    assert not resolved.from_tenant_plan


def test_nothing_configured_is_unlimited_and_keyed_by_client_id() -> None:
    resolved = QuotaConfigStore().resolve(PRODUCE, USER, CLIENT, None)
    assert resolved.limit is None and resolved.level is None
    assert resolved.describe() == "unlimited"
    assert resolved.entity == QuotaEntityKey("", "", CLIENT)


def test_other_users_and_client_ids_do_not_match_specific_levels() -> None:
    store = _store_with_levels(ALL_LEVELS)
    resolved = store.resolve(PRODUCE, "globex.billing", "other-app", None)
    assert resolved.level is QuotaLevel.DEFAULT_USER_DEFAULT_CLIENT


def test_each_key_resolves_independently() -> None:
    store = QuotaConfigStore()
    store.set_entity(f"users/{USER}/clients/{CLIENT}", {"producer_byte_rate": "100"})
    store.set_entity("users/<default>", {"request_percentage": "25.5"})
    store.set_entity("clients/<default>", {"consumer_byte_rate": "300",
                                           "producer_byte_rate": "999"})
    produce = store.resolve(QuotaType.PRODUCE, USER, CLIENT, None)
    fetch = store.resolve(QuotaType.FETCH, USER, CLIENT, None)
    request = store.resolve(QuotaType.REQUEST, USER, CLIENT, None)
    assert (produce.level, produce.limit) == (QuotaLevel.USER_CLIENT, 100.0)
    assert (fetch.level, fetch.limit) == (QuotaLevel.DEFAULT_CLIENT, 300.0)
    assert (request.level, request.limit) == (QuotaLevel.DEFAULT_USER, 25.5)


@pytest.mark.parametrize(("level", "expected"), [
    (QuotaLevel.USER_CLIENT, QuotaEntityKey("", USER, CLIENT)),
    (QuotaLevel.USER_DEFAULT_CLIENT, QuotaEntityKey("", USER, CLIENT)),
    (QuotaLevel.USER, QuotaEntityKey("", USER, "")),
    (QuotaLevel.DEFAULT_USER_CLIENT, QuotaEntityKey("", USER, CLIENT)),
    (QuotaLevel.DEFAULT_USER_DEFAULT_CLIENT, QuotaEntityKey("", USER, CLIENT)),
    (QuotaLevel.DEFAULT_USER, QuotaEntityKey("", USER, "")),
    (QuotaLevel.CLIENT, QuotaEntityKey("", "", CLIENT)),
    (QuotaLevel.DEFAULT_CLIENT, QuotaEntityKey("", "", CLIENT)),
])
def test_sharing_key_follows_kafka_metric_tags(level: QuotaLevel, expected: QuotaEntityKey) -> None:
    path = next(p for lvl, p, _ in ALL_LEVELS if lvl is level)
    store = QuotaConfigStore()
    store.set_entity(path, {"producer_byte_rate": "10"})
    assert store.resolve(PRODUCE, USER, CLIENT, None).entity == expected


def test_user_quota_is_shared_by_client_ids_but_user_client_quota_is_not() -> None:
    store = QuotaConfigStore()
    store.set_entity(f"users/{USER}", {"producer_byte_rate": "10"})
    store.set_entity(f"users/{USER}/clients/{CLIENT}", {"producer_byte_rate": "20"})
    a = store.resolve(PRODUCE, USER, "app-2", None).entity
    b = store.resolve(PRODUCE, USER, "app-3", None).entity
    c = store.resolve(PRODUCE, USER, CLIENT, None).entity
    assert a == b == QuotaEntityKey("", USER, "")
    assert c == QuotaEntityKey("", USER, CLIENT) != a


def test_default_user_level_gives_each_user_its_own_quota() -> None:
    store = QuotaConfigStore()
    store.set_entity("users/<default>", {"producer_byte_rate": "10"})
    assert (store.resolve(PRODUCE, "a.x", CLIENT, None).entity
            != store.resolve(PRODUCE, "b.y", CLIENT, None).entity)


# ---- tenant plans --------------------------------------------------------------------

PLAN = TenantQuotaDefaults.from_config("acme", {"producer_byte_rate": "1048576",
                                                "consumer_byte_rate": "2097152"})


def test_tenant_plan_replaces_cluster_default_user_level() -> None:
    store = QuotaConfigStore()
    store.set_entity("users/<default>", {"producer_byte_rate": "500"})
    tenant_user = store.resolve(PRODUCE, USER, CLIENT, PLAN)
    assert (tenant_user.level, tenant_user.limit) == (QuotaLevel.DEFAULT_USER, 1048576.0)
    assert tenant_user.from_tenant_plan
    assert tenant_user.describe() == "tenant acme plan (users/<default>)"
    assert tenant_user.entity == QuotaEntityKey("acme", USER, "")
    operator = store.resolve(PRODUCE, "admin", CLIENT, None)
    assert (operator.limit, operator.from_tenant_plan) == (500.0, False)


def test_cluster_default_user_client_levels_do_not_apply_inside_a_tenant() -> None:
    store = QuotaConfigStore()
    store.set_entity(f"users/<default>/clients/{CLIENT}", {"consumer_byte_rate": "1"})
    store.set_entity("users/<default>/clients/<default>", {"consumer_byte_rate": "2"})
    assert store.resolve(QuotaType.FETCH, USER, CLIENT, PLAN).limit == 2097152.0
    assert store.resolve(QuotaType.FETCH, USER, CLIENT, None).limit == 1.0


def test_key_missing_from_plan_falls_through_to_client_levels_not_cluster_default() -> None:
    store = QuotaConfigStore()
    store.set_entity("users/<default>", {"request_percentage": "10"})
    store.set_entity("clients/<default>", {"request_percentage": "50"})
    resolved = store.resolve(QuotaType.REQUEST, USER, CLIENT, PLAN)
    assert (resolved.level, resolved.limit) == (QuotaLevel.DEFAULT_CLIENT, 50.0)
    assert resolved.entity == QuotaEntityKey("acme", "", CLIENT)
    assert QuotaConfigStore().resolve(QuotaType.REQUEST, USER, CLIENT, PLAN).limit is None


def test_principal_overrides_beat_the_tenant_plan() -> None:
    store = QuotaConfigStore()
    store.set_entity(f"users/{USER}/clients/{CLIENT}", {"producer_byte_rate": "1024"})
    resolved = store.resolve(PRODUCE, USER, CLIENT, PLAN)
    assert (resolved.level, resolved.limit, resolved.from_tenant_plan) == (
        QuotaLevel.USER_CLIENT, 1024.0, False)


def test_client_id_sharing_is_scoped_to_the_tenant() -> None:
    store = QuotaConfigStore()
    store.set_entity("clients/<default>", {"producer_byte_rate": "10"})
    empty_plan = TenantQuotaDefaults("globex")
    acme = store.resolve(PRODUCE, "acme.a", CLIENT, TenantQuotaDefaults("acme"))
    globex = store.resolve(PRODUCE, "globex.b", CLIENT, empty_plan)
    assert acme.limit == globex.limit == 10.0
    assert acme.entity != globex.entity


def test_changed_plan_is_seen_without_invalidation() -> None:
    store = QuotaConfigStore()
    assert store.resolve(PRODUCE, USER, CLIENT, PLAN).limit == 1048576.0
    upgraded = TenantQuotaDefaults.from_config("acme", {"producer_byte_rate": "4194304"})
    assert store.resolve(PRODUCE, USER, CLIENT, upgraded).limit == 4194304.0


# ---- the store: paths, values, cache ------------------------------------------------

def test_entity_paths_are_desanitized() -> None:
    assert parse_entity_path("users/acme.orders/clients/app%201") == ("acme.orders", "app 1")
    assert parse_entity_path("clients/<default>") == (None, "<default>")
    assert parse_entity_path("users/CN%3Dalice") == ("CN=alice", None)
    assert parse_entity_path("topics/orders") is None
    assert parse_entity_path("brokers/<default>") is None
    for malformed in ("users/a/b", "users/", "clients/a/clients/b", "users/a/clients/"):
        with pytest.raises(ValueError):
            parse_entity_path(malformed)


def test_sanitized_client_id_matches_the_raw_one() -> None:
    store = QuotaConfigStore()
    store.set_entity("clients/my%20app", {"producer_byte_rate": "5"})
    assert store.resolve(PRODUCE, USER, "my app", None).level is QuotaLevel.CLIENT


def test_non_quota_keys_and_other_entity_types_are_ignored() -> None:
    store = QuotaConfigStore()
    store.set_entity(f"users/{USER}", {"SCRAM-SHA-512": "salt=x", "tenant": "acme"})
    store.set_entity("topics/orders", {"retention.ms": "1000"})
    assert store.resolve(PRODUCE, USER, CLIENT, None).limit is None


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", True, [1]])
def test_invalid_quota_values_are_rejected_and_leave_the_store_unchanged(value: object) -> None:
    store = QuotaConfigStore()
    store.set_entity("clients/<default>", {"producer_byte_rate": "7"})
    with pytest.raises(InvalidQuotaConfig):
        store.set_entity("clients/<default>", {"producer_byte_rate": value})
    assert store.resolve(PRODUCE, USER, CLIENT, None).limit == 7.0


def test_numbers_are_accepted_as_well_as_strings() -> None:
    assert parse_quota_config({"producer_byte_rate": 1024, "request_percentage": 12.5}) == {
        QuotaType.PRODUCE: 1024.0, QuotaType.REQUEST: 12.5}


def test_changes_invalidate_cached_resolutions() -> None:
    store = QuotaConfigStore()
    assert store.resolve(PRODUCE, USER, CLIENT, None).limit is None
    store.set_entity(f"clients/{CLIENT}", {"producer_byte_rate": "100"})
    assert store.resolve(PRODUCE, USER, CLIENT, None).limit == 100.0
    store.set_entity(f"users/{USER}", {"producer_byte_rate": "50"})
    assert store.resolve(PRODUCE, USER, CLIENT, None).limit == 50.0
    store.set_entity(f"users/{USER}", None)
    assert store.resolve(PRODUCE, USER, CLIENT, None).limit == 100.0
    store.set_entity(f"clients/{CLIENT}", {"consumer_byte_rate": "1"})
    assert store.resolve(PRODUCE, USER, CLIENT, None).limit is None


def test_cache_is_bounded_and_still_correct_after_eviction() -> None:
    store = QuotaConfigStore(cache_size=2)
    store.set_entity("clients/<default>", {"producer_byte_rate": "9"})
    for client in ("a", "b", "c", "a"):
        assert store.resolve(PRODUCE, USER, client, None).limit == 9.0
    assert len(store._cache) == 2


def test_replace_all_drops_entities_missing_from_the_reload() -> None:
    store = QuotaConfigStore()
    store.set_entity(f"users/{USER}", {"producer_byte_rate": "50"})
    store.replace_all({"clients/<default>": {"producer_byte_rate": "9"},
                       "topics/x": {"retention.ms": "1"}})
    resolved = store.resolve(PRODUCE, USER, CLIENT, None)
    assert (resolved.level, resolved.limit) == (QuotaLevel.DEFAULT_CLIENT, 9.0)
    with pytest.raises(InvalidQuotaConfig):
        store.replace_all({"clients/a": {"producer_byte_rate": "x"}})
    assert store.resolve(PRODUCE, USER, CLIENT, None).limit == 9.0
