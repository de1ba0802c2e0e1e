"""Hot-path timings: ``python -m tests.unit.brokerd.protocol.bench_codec``.

Not a test (no ``test_`` prefix): it prints figures for the report and for regressions.
"""

from __future__ import annotations

import timeit

from brokerd.protocol import ApiKey, RequestHeader, decode_request, encode_request, encode_response
from brokerd.protocol.records import build_batch


class FileRegion:
    """Stand-in for the storage layer's sendfile region: only ``nbytes`` matters here."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def produce_frame(total_bytes: int, partitions: int) -> bytes:
    """A Produce v9 request carrying ``total_bytes`` of record batches over N partitions."""
    value = b"x" * 1000
    per_partition = total_bytes // partitions
    batch = build_batch([(None, value, [], 0)] * (per_partition // 1010))
    body = {
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [
            {
                "name": "bench",
                "partition_data": [{"index": i, "records": batch} for i in range(partitions)],
            }
        ],
    }
    return encode_request(ApiKey.PRODUCE, 9, 1, "bench", body)[4:]


def fetch_body(partitions: int) -> dict:
    return {
        "responses": [
            {
                "topic": "bench",
                "partitions": [
                    {
                        "partition_index": i,
                        "high_watermark": 1000 + i,
                        "last_stable_offset": 1000 + i,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "records": FileRegion(65536),
                    }
                    for i in range(partitions)
                ],
            }
        ],
    }


def _per_call(stmt, number: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=5)) / number


def main() -> None:
    frame = produce_frame(1 << 20, 1)
    seconds = _per_call(lambda: decode_request(frame), 2000)
    print(f"decode Produce v9, 1 MiB, 1 partition:    {seconds * 1e6:8.1f} us")
    frame = produce_frame(1 << 20, 16)
    seconds = _per_call(lambda: decode_request(frame), 2000)
    print(f"decode Produce v9, 1 MiB, 16 partitions:  {seconds * 1e6:8.1f} us")
    for version in (11, 12):
        header = RequestHeader(ApiKey.FETCH, version, 1, None)
        body = fetch_body(100)
        seconds = _per_call(lambda h=header, b=body: encode_response(h, b), 2000)
        print(f"encode Fetch v{version} response, 100 partitions: {seconds * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
