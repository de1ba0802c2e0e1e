"""A Kafka broker that stores nothing and replicates nothing: ``python -m bench.null_broker``.

Why: the default-path target (10,000 one-record acks=all requests/s from several
librdkafka producers, p99 within 20 ms) is measured with the producers, the consumer and
three brokers on one 2-core machine.  What the clients themselves cost there, and what the
cheapest possible Python answer costs, bound what any broker written like ours could reach.
This process is that cheapest answer: uvloop, the project's own codec, one partition per
topic led by itself, and every Produce answered the moment it is read (no log, no
followers, no quotas, no metering), with offsets that advance as a real log's would, so an
idempotent producer sees nothing amiss.

It serves ApiVersions, Metadata, InitProducerId and Produce only: enough for a producer,
not for a consumer.  Prints ``port <N>`` once listening, then runs until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import sys
import uuid
from collections import defaultdict
from typing import Any

import uvloop

from brokerd.protocol import ApiKey, decode_request, encode_response
from brokerd.protocol.records import parse_batch_header
from brokerd.server.handlers import api_versions

NODE_ID = 1
SERVED = (ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.INIT_PRODUCER_ID, ApiKey.PRODUCE)
_SIZE = struct.Struct(">i")


class NullBroker:
    """The answers: one partition per topic, offsets counted, nothing kept."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.next_offsets: defaultdict[tuple[str, int], int] = defaultdict(int)
        self.next_producer_id = 1000
        self.topic_ids: defaultdict[str, uuid.UUID] = defaultdict(uuid.uuid4)

    def answer(self, api_key: int, body: dict[str, Any]) -> dict[str, Any] | None:
        if api_key == ApiKey.PRODUCE:
            return self.produce(body)
        if api_key == ApiKey.METADATA:
            return self.metadata(body)
        if api_key == ApiKey.INIT_PRODUCER_ID:
            self.next_producer_id += 1
            return {"throttle_time_ms": 0, "error_code": 0,
                    "producer_id": self.next_producer_id, "producer_epoch": 0}
        return self.api_versions()

    def produce(self, body: dict[str, Any]) -> dict[str, Any] | None:
        responses = []
        for topic in body["topic_data"]:
            partitions = []
            for data in topic["partition_data"]:
                key = (topic["name"], data["index"])
                base = self.next_offsets[key]
                header = parse_batch_header(data["records"], 0)
                self.next_offsets[key] = base + header.last_offset_delta + 1
                partitions.append({"index": data["index"], "error_code": 0,
                                   "base_offset": base, "log_append_time_ms": -1,
                                   "log_start_offset": 0, "record_errors": [],
                                   "error_message": None})
            responses.append({"name": topic["name"], "partition_responses": partitions})
        return None if body["acks"] == 0 else {"responses": responses, "throttle_time_ms": 0}

    def metadata(self, body: dict[str, Any]) -> dict[str, Any]:
        names = [topic["name"] for topic in body["topics"] or ()]
        return {"throttle_time_ms": 0, "cluster_id": "null-broker", "controller_id": NODE_ID,
                "brokers": [{"node_id": NODE_ID, "host": self.host, "port": self.port,
                             "rack": None}],
                "topics": [{"error_code": 0, "name": name, "topic_id": self.topic_ids[name],
                            "is_internal": False, "topic_authorized_operations": 0,
                            "partitions": [{"error_code": 0, "partition_index": 0,
                                            "leader_id": NODE_ID, "leader_epoch": 0,
                                            "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID],
                                            "offline_replicas": []}]}
                           for name in names],
                "cluster_authorized_operations": 0}

    @staticmethod
    def api_versions() -> dict[str, Any]:
        """The real broker's table: librdkafka infers features from it (record batches v2
        need Fetch v4 listed too, compression Produce v0-2), and a producer calls only
        what ``SERVED`` names."""
        return dict(api_versions.response_body())


class NullConnection(asyncio.Protocol):
    """Framing and nothing else: each whole frame answered at once, in order."""

    def __init__(self, broker: NullBroker) -> None:
        self._broker = broker
        self._pending = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._pending += data
        answers = []
        while len(self._pending) >= 4:
            (size,) = _SIZE.unpack_from(self._pending, 0)
            if len(self._pending) < 4 + size:
                break
            frame = memoryview(bytes(self._pending[4:4 + size]))
            del self._pending[:4 + size]
            header, body = decode_request(frame)
            if header.api_key not in SERVED:
                assert self._transport is not None
                self._transport.close()
                return
            response = self._broker.answer(header.api_key, body)
            if response is not None:
                answers.extend(encode_response(header, response))
        if answers and self._transport is not None:
            self._transport.write(b"".join(answers))


async def serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    broker = NullBroker(host, port)
    server = await loop.create_server(lambda: NullConnection(broker), host, port)
    broker.port = server.sockets[0].getsockname()[1]
    print(f"port {broker.port}", flush=True)
    await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.null_broker", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    uvloop.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
