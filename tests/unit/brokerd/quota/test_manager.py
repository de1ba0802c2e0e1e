"""One quota type's manager: sensors per entity, throttles, fetch cap, expiry, metrics."""

from __future__ import annotations

import pytest

from brokerd.quota import QuotaConfigStore, QuotaEntityKey, QuotaManager, QuotaType, QuotaWindow

USER, CLIENT = "acme.orders", "app-1"


def _manager(quota_type: QuotaType = QuotaType.PRODUCE, /, **entities: str) -> QuotaManager:
    """A manager over a store holding ``entity_path=limit`` for ``quota_type``'s key."""
    store = QuotaConfigStore()
    for path, limit in entities.items():
        store.set_entity(path.replace("__", "/"), {quota_type.value: limit})
    return QuotaManager(quota_type, store)


def test_within_quota_is_not_throttled() -> None:
    manager = _manager(clients__app_1="1000")
    assert manager.record_and_get_throttle_ms(USER, "app_1", None, 5_000, 0) == 0
    assert manager.record_and_get_throttle_ms(USER, "app_1", None, 5_000, 0) == 0  # exactly 1000/s


def test_over_quota_throttle_follows_the_formula() -> None:
    manager = _manager(clients__app_1="1000")
    # 20 000 B over the cold 10 s span = 2 000 B/s: (2000 - 1000) / 1000 x 10 000 ms.
    assert manager.record_and_get_throttle_ms(USER, "app_1", None, 20_000, 0) == 10_000


def test_unlimited_records_but_never_throttles() -> None:
    manager = _manager()
    assert manager.record_and_get_throttle_ms(USER, CLIENT, None, 10**12, 0) == 0
    [metrics] = manager.snapshot(0)
    assert metrics.limit is None and metrics.rate == pytest.approx(10**11)
    assert metrics.entity == QuotaEntityKey("", "", CLIENT)


def test_client_ids_of_a_user_share_a_user_quota() -> None:
    manager = _manager(**{f"users__{USER}": "1000"})
    assert manager.record_and_get_throttle_ms(USER, "app-1", None, 6_000, 0) == 0
    # 12 000 B over 10 s = 1 200 B/s on the shared sensor: 0.2 x 10 000 ms.
    assert manager.record_and_get_throttle_ms(USER, "app-2", None, 6_000, 0) == 2_000
    assert len(manager) == 1


def test_user_client_quotas_are_separate() -> None:
    manager = _manager(**{f"users__{USER}__clients__<default>": "1000"})
    assert manager.record_and_get_throttle_ms(USER, "app-1", None, 6_000, 0) == 0
    assert manager.record_and_get_throttle_ms(USER, "app-2", None, 6_000, 0) == 0
    assert len(manager) == 2


def test_request_quota_throttle_is_capped_at_one_window() -> None:
    manager = _manager(QuotaType.REQUEST, clients__app_1="10")
    # 500 percent-seconds over 10 s = 50 %: uncapped that would be 40 000 ms.
    assert manager.record_and_get_throttle_ms(USER, "app_1", None, 500, 0) == 1_000


def test_byte_rate_throttles_are_not_capped() -> None:
    manager = _manager(QuotaType.FETCH, clients__app_1="10")
    assert manager.record_and_get_throttle_ms(USER, "app_1", None, 500, 0) == 40_000


def test_a_new_override_applies_to_the_next_request() -> None:
    store = QuotaConfigStore()
    manager = QuotaManager(QuotaType.PRODUCE, store)
    assert manager.record_and_get_throttle_ms(USER, CLIENT, None, 20_000, 0) == 0
    store.set_entity(f"clients/{CLIENT}", {"producer_byte_rate": "1000"})
    # Same sensor (client-id key both times): its 20 000 B now exceed 1 000 B/s.
    assert manager.record_and_get_throttle_ms(USER, CLIENT, None, 0, 0) == 10_000


def test_a_removed_override_stops_throttling_and_its_sensor_reports_unlimited() -> None:
    """Kafka updates its quota metrics on a config change: the old entity's sensor must not
    keep showing the removed limit until it expires."""
    store = QuotaConfigStore()
    store.set_entity(f"users/{USER}", {"producer_byte_rate": "1000"})
    manager = QuotaManager(QuotaType.PRODUCE, store)
    assert manager.record_and_get_throttle_ms(USER, CLIENT, None, 20_000, 0) > 0
    assert [m.limit for m in manager.snapshot(0)] == [1000]
    store.set_entity(f"users/{USER}", None)
    assert manager.record_and_get_throttle_ms(USER, CLIENT, None, 20_000, 0) == 0
    assert {m.limit for m in manager.snapshot(0)} == {None}
    store.set_entity(f"users/{USER}", {"producer_byte_rate": "2000"})
    assert 2000 in {m.limit for m in manager.snapshot(0)}  # and back again


def test_throttle_check_records_nothing() -> None:
    manager = _manager(clients__app_1="1000")
    assert manager.current_throttle_ms(USER, "app_1", None, 0) == 0
    assert len(manager) == 0                      # no sensor created by a check
    manager.record_and_get_throttle_ms(USER, "app_1", None, 20_000, 0)
    assert manager.current_throttle_ms(USER, "app_1", None, 0) == 10_000
    assert manager.current_throttle_ms(USER, "app_1", None, 0) == 10_000
    # Once the first sample's last event is 11 s old it is forgotten.
    assert manager.current_throttle_ms(USER, "app_1", None, 11_000) == 0


def test_unrecord_takes_the_value_back() -> None:
    manager = _manager(clients__app_1="1000")
    manager.record_and_get_throttle_ms(USER, "app_1", None, 4_000, 0)
    assert manager.record_and_get_throttle_ms(USER, "app_1", None, 16_000, 100) > 0
    manager.unrecord(USER, "app_1", None, 16_000, 100)
    [metrics] = manager.snapshot(100)
    assert metrics.rate == pytest.approx(4_000 / 10.1)


def test_max_value_in_window_is_the_remaining_allowance_capped_by_kafkas_rule() -> None:
    manager = _manager(QuotaType.FETCH, clients__small="10240")
    # Cold: (T - 0) x the assumed 10 s = Kafka's cap T x (N-1) x W.
    assert manager.max_value_in_window(USER, "small", None, 0) == 102_400
    assert manager.max_value_in_window(USER, "other", None, 0) is None
    # 51 200 B taken at t=0; at t=500 the span is 10.5 s: 10 240 x 10.5 - 51 200.
    manager.record_and_get_throttle_ms(USER, "small", None, 51_200, 0)
    assert manager.max_value_in_window(USER, "small", None, 500) == 56_320
    # Over the quota: nothing more (the read still returns one whole batch).
    manager.record_and_get_throttle_ms(USER, "small", None, 100_000, 500)
    assert manager.max_value_in_window(USER, "small", None, 500) == 0


def test_one_cold_window_allows_one_window_of_burst_then_paces() -> None:
    store = QuotaConfigStore()
    store.set_entity("clients/app-1", {"producer_byte_rate": "1000"})
    manager = QuotaManager(QuotaType.PRODUCE, store, QuotaWindow(cold_start_windows=1))
    # 1 000 B over the cold span of 1 s is exactly the quota; 1 000 more doubles it:
    # (2000 - 1000) / 1000 x 1 000 ms.
    assert manager.record_and_get_throttle_ms(USER, "app-1", None, 1_000, 0) == 0
    assert manager.record_and_get_throttle_ms(USER, "app-1", None, 1_000, 0) == 1_000
    # The fetch allowance of a cold entity is one window's worth, not Kafka's ten.
    fetch = QuotaManager(QuotaType.FETCH, _store_with("clients/app-1", "consumer_byte_rate"),
                         QuotaWindow(cold_start_windows=1))
    assert fetch.max_value_in_window(USER, "app-1", None, 0) == 1_000


def _store_with(entity_path: str, key: str) -> QuotaConfigStore:
    store = QuotaConfigStore()
    store.set_entity(entity_path, {key: "1000"})
    return store


def test_idle_sensors_expire_after_an_hour() -> None:
    manager = _manager()
    manager.record_and_get_throttle_ms(USER, "a", None, 1, 0)
    manager.record_and_get_throttle_ms(USER, "b", None, 1, 1_800_000)
    assert manager.expire_idle(3_600_000) == 0
    assert manager.expire_idle(3_600_001) == 1
    assert [m.entity.client_id for m in manager.snapshot(3_600_001)] == ["b"]


def test_expiry_also_runs_while_recording() -> None:
    manager = _manager()
    for index in range(100):
        manager.record_and_get_throttle_ms(USER, f"job-{index}", None, 1, index)
    assert len(manager) == 100
    manager.record_and_get_throttle_ms(USER, "late", None, 1, 3_700_000)
    assert len(manager) == 1


def test_snapshot_reports_rate_limit_source_and_throttle_totals() -> None:
    manager = _manager(**{f"users__{USER}": "1000"})
    manager.record_and_get_throttle_ms(USER, CLIENT, None, 20_000, 0)
    manager.record_and_get_throttle_ms(USER, CLIENT, None, 0, 0)
    [metrics] = manager.snapshot(0)
    assert metrics.quota_type is QuotaType.PRODUCE
    assert metrics.entity == QuotaEntityKey("", USER, "")
    assert metrics.rate == pytest.approx(2_000.0)
    assert (metrics.limit, metrics.source) == (1000.0, "/config/users/<user>")
    assert (metrics.throttle_time_ms_total, metrics.throttled_total) == (20_000, 2)
