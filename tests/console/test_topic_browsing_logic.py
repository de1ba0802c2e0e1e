"""Pure parts of the topic page: payload rendering, where a read starts, the traffic series."""

from __future__ import annotations

import json

import pytest

from dashboard.message_browser import BrowseRequest, Shown, _client_config, render, start_offset
from dashboard.topic_forms import parse_timestamp
from dashboard.topic_traffic import minute_series


def test_render_picks_json_then_text_then_hex() -> None:
    assert render(b'{"id": 7}') == Shown("json", '{\n  "id": 7\n}')
    assert render(b"hello world") == Shown("text", "hello world")
    assert render(b"line\nnext") == Shown("text", "line\nnext")
    assert render(b"\x00\xff\x10") == Shown("hex", "00ff 10")
    assert render(b"\x01ctl") == Shown("hex", "0163 746c")  # not printable: never shown raw
    assert render(None) is None


def test_render_honours_the_asked_format_and_falls_back_to_hex() -> None:
    assert render(b'{"a":1}', "text") == Shown("text", '{"a":1}')
    assert render(b"abc", "hex") == Shown("hex", "6162 63")
    assert render(b"not json", "json") == Shown("hex", "6e6f 7420 6a73 6f6e")
    assert render("é".encode(), "text") == Shown("text", "é")


def test_start_offset() -> None:
    newest = BrowseRequest(max_records=20)
    assert start_offset(newest, 0, 100, None) == 80
    assert start_offset(newest, 90, 100, None) == 90
    assert start_offset(BrowseRequest(offset=5), 10, 100, None) == 10  # before the log: its start
    assert start_offset(BrowseRequest(offset=500), 10, 100, None) == 100  # past the end: nothing
    by_time = BrowseRequest(timestamp_ms=1_700_000_000_000)
    assert start_offset(by_time, 0, 100, 42) == 42
    assert start_offset(by_time, 0, 100, -1) == 100  # no record that late


@pytest.mark.parametrize("fields", [{"max_records": 0}, {"max_records": 501},
                                    {"max_bytes": (1 << 20) + 1}, {"format": "xml"},
                                    {"offset": -1}, {"offset": 1, "timestamp_ms": 1}])
def test_browse_requests_are_bounded(fields: dict) -> None:
    with pytest.raises(ValueError):
        BrowseRequest(**fields)


def test_the_browser_reads_as_the_tenant_on_its_own_listener(settings) -> None:  # type: ignore[no-untyped-def]
    """docker-compose's control plane cannot reach the clients' localhost:9292: the
    browser then uses BROWSER_BOOTSTRAP_SERVERS (a SASL_PLAINTEXT listener on the compose
    network), still with the tenant's key, and offers no CA to a plaintext listener."""
    settings.BOOTSTRAP_SERVERS, settings.CLIENT_SECURITY_PROTOCOL = "localhost:9292", "SASL_SSL"
    settings.BROWSER_BOOTSTRAP_SERVERS = "broker1:9192,broker2:9192"
    settings.BROWSER_SECURITY_PROTOCOL = "SASL_PLAINTEXT"
    settings.SSL_CA_LOCATION = "/certs/ca.pem"
    config = _client_config("key", "secret", 1 << 20)
    assert config["bootstrap.servers"] == "broker1:9192,broker2:9192"
    assert config["security.protocol"] == "SASL_PLAINTEXT"
    assert (config["sasl.username"], config["sasl.password"]) == ("key", "secret")
    assert "ssl.ca.location" not in config
    settings.BROWSER_SECURITY_PROTOCOL = "SASL_SSL"
    assert _client_config("key", "secret", 1 << 20)["ssl.ca.location"] == "/certs/ca.pem"


def test_parse_timestamp() -> None:
    assert parse_timestamp("1700000000000") == 1_700_000_000_000
    assert parse_timestamp("2023-11-14T22:13:20") == 1_700_000_000_000  # naive: UTC
    assert parse_timestamp("2023-11-14T23:13:20+01:00") == 1_700_000_000_000


def _usage(tenant: str, minute: int, *entries: tuple[str, int, int], version: int = 1) -> bytes:
    return json.dumps({"version": version, "broker_id": 1, "window_start": minute, "sequence": 0,
                       "tenant": tenant, "storage": [],
                       "traffic": [{"principal": "User:x", "client_id": "c", "topic": t,
                                    "bytes_in": i, "bytes_out": o, "produce_requests": 1,
                                    "fetch_requests": 1} for t, i, o in entries]}).encode()


def test_minute_series_sums_the_topic_per_minute_and_fills_idle_minutes() -> None:
    m = 1_700_000_040_000 - 1_700_000_040_000 % 60_000
    values = [_usage("acme", m, ("orders", 100, 10), ("logs", 5, 5)),
              _usage("acme", m, ("orders", 1, 2)),  # another broker, same minute: adds up
              _usage("acme", m + 120_000, ("orders", 7, 0)),
              _usage("globex", m, ("orders", 999, 999)),  # another tenant
              _usage("acme", m, ("orders", 999, 999), version=2),  # unknown version
              _usage("acme", m - 60_000, ("orders", 999, 999)),  # before the window
              b"not json"]
    series = minute_series(values, "acme", "orders", m + 30_000, m + 180_000)
    assert series.minutes == [m, m + 60_000, m + 120_000]
    assert series.bytes_in == [101, 0, 7] and series.bytes_out == [12, 0, 0]
