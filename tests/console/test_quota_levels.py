"""Kafka's quota precedence, per key, with the tenant plan at the <default> user level."""

from __future__ import annotations

from dashboard.quota_levels import DEFAULT, Effective, Entity, effective_quotas, precedence


def test_precedence_order_with_and_without_a_client_id() -> None:
    assert precedence("u", "c") == [("u", "c"), ("u", DEFAULT), ("u", None), (DEFAULT, "c"),
                                    (DEFAULT, DEFAULT), (DEFAULT, None), (None, "c"),
                                    (None, DEFAULT)]
    assert precedence("u", None) == [("u", DEFAULT), ("u", None), (DEFAULT, DEFAULT),
                                     (DEFAULT, None), (None, DEFAULT)]


def test_each_key_takes_its_most_specific_level() -> None:
    configured = {("u", "c"): {"producer_byte_rate": "100"},
                  ("u", None): {"producer_byte_rate": "200", "consumer_byte_rate": "300"},
                  (None, "c"): {"request_percentage": "50"}}
    plan = {"consumer_byte_rate": "999", "producer_byte_rate": "999"}
    with_client = effective_quotas(configured, "u", "c", plan)
    assert with_client["producer_byte_rate"] == Effective("100", "users/u/clients/c")
    assert with_client["consumer_byte_rate"] == Effective("300", "users/u")
    assert with_client["request_percentage"] == Effective("50", "clients/c")
    other_client = effective_quotas(configured, "u", None, plan)
    assert other_client["producer_byte_rate"] == Effective("200", "users/u")
    assert other_client["request_percentage"] == Effective(None, "none")


def test_the_plan_is_the_default_user_level() -> None:
    configured: dict[Entity, dict[str, str]] = {(DEFAULT, DEFAULT): {"consumer_byte_rate": "7"}}
    result = effective_quotas(configured, "u", None, {"producer_byte_rate": "5",
                                                      "consumer_byte_rate": "6"})
    assert result["producer_byte_rate"] == Effective("5", "plan")
    assert result["consumer_byte_rate"] == Effective("7", "users/<default>/clients/<default>")
