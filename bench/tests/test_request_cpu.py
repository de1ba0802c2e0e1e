"""The per-request benchmark's requests stay valid for the codec it measures."""

from __future__ import annotations

from bench.request_cpu import REQUESTS, TOPIC
from brokerd.protocol.codec import decode_request, encode_request


def test_every_measured_request_encodes_and_decodes_at_its_version() -> None:
    for name, (api_key, version, body) in REQUESTS.items():
        frame = encode_request(api_key, version, 7, "bench", body)
        header, _ = decode_request(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id) == (
            api_key, version, 7), name


def test_the_fetches_read_the_one_record_or_the_log_end() -> None:
    offsets = {name: body["topics"][0]["partitions"][0]["fetch_offset"]
               for name, (_, _, body) in REQUESTS.items() if name.startswith("fetch")}
    assert offsets == {"fetch-empty": 1, "fetch-record": 0}
    assert all(body["topics"][0]["topic"] == TOPIC and body["max_wait_ms"] == 0
               for name, (_, _, body) in REQUESTS.items() if name.startswith("fetch"))
