"""The message browser: read a few records of a topic as the tenant's own client would.

The console holds no tenant credential, so it reads with an API key and secret the user gives
(never stored), on a tenant listener (``settings.BROWSER_BOOTSTRAP_SERVERS``): the brokers
then apply that key's tenant namespace (names are the tenant's own; another tenant's topic cannot even be
named), its ACLs (Read and Describe on the topic) and its consumer quota, exactly as for any
client.  No group joins and nothing is committed (the consumer only assigns partitions).

Bounds: at most :data:`MAX_RECORDS` records and :data:`MAX_BYTES` bytes of keys, values and
headers per request, and :data:`READ_BUDGET_S` seconds (a throttled read returns what arrived).
The rendering of payloads (:func:`render`) and the choice of start offset (:func:`start_offset`)
are pure; :func:`read_records` is the only I/O.
"""

from __future__ import annotations

import binascii
import json
import time
from dataclasses import asdict, dataclass, field

from confluent_kafka import (
    OFFSET_END,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from django.conf import settings
from django.contrib.auth.hashers import check_password

from tenants.models import ApiKey

MAX_RECORDS = 500
MAX_BYTES = 1 << 20
DEFAULT_RECORDS = 20
DEFAULT_BYTES = 256 << 10
READ_BUDGET_S = 5.0
FORMATS = ("auto", "text", "json", "hex")
BROWSER_GROUP = "console-browser"  # required by the client; never joined, never committed
# what a denied or unknown topic looks like to the client: Kafka answers both the same way
# to a principal without Describe, so the console does too
# The client looks up the coordinator of its (unused) group: a key without Describe on it gets
# an error about the group, which does not concern reading partitions.
IGNORED = {KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError._TRANSPORT}
NOT_READABLE = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART,
                KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}


@dataclass(frozen=True)
class BrowseRequest:
    """Where to start in one partition: an offset, a timestamp (the first record at or after
    it), or neither (the newest ``max_records``)."""

    partition: int = 0
    offset: int | None = None
    timestamp_ms: int | None = None
    max_records: int = DEFAULT_RECORDS
    max_bytes: int = DEFAULT_BYTES
    format: str = "auto"

    def __post_init__(self) -> None:
        if not 1 <= self.max_records <= MAX_RECORDS:
            raise ValueError(f"max records must be 1 to {MAX_RECORDS}")
        if not 1 <= self.max_bytes <= MAX_BYTES:
            raise ValueError(f"max bytes must be 1 to {MAX_BYTES}")
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}")
        if self.partition < 0 or (self.offset is not None and self.offset < 0):
            raise ValueError("partition and offset are never negative")
        if self.offset is not None and self.timestamp_ms is not None:
            raise ValueError("start from an offset or from a timestamp, not both")


@dataclass(frozen=True)
class Shown:
    """A key, value or header value as shown: the format used and the text."""

    format: str
    text: str


@dataclass(frozen=True)
class BrowsedRecord:
    partition: int
    offset: int
    timestamp_ms: int | None
    key: Shown | None
    value: Shown | None
    headers: list[tuple[str, Shown | None]]
    size: int

    def as_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class BrowseResult:
    records: list[BrowsedRecord] = field(default_factory=list)
    log_start: int | None = None
    high_watermark: int | None = None
    partitions: int | None = None
    stopped: str = ""  # why reading stopped early: a bound, the time budget
    error: str = ""
    authenticated: bool = True  # False: the secret did not match the key (nothing was read)


def render(payload: bytes | None, wanted: str = "auto") -> Shown | None:
    """``auto``: indented JSON if it parses, text if it is printable UTF-8, else hex.  Asked
    for ``json`` or ``text`` it cannot be, a payload falls back to hex (never mis-decoded)."""
    if payload is None:
        return None
    as_hex = Shown("hex", binascii.hexlify(payload, " ", -2).decode())
    if wanted == "hex":
        return as_hex
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return as_hex
    if wanted in ("auto", "json"):
        try:
            return Shown("json", json.dumps(json.loads(text), indent=2, ensure_ascii=False))
        except ValueError:
            if wanted == "json":
                return as_hex
    if text.isprintable() or all(c.isprintable() or c in "\n\r\t" for c in text):
        return Shown("text", text)
    return as_hex


def start_offset(request: BrowseRequest, log_start: int, high_watermark: int,
                 at_timestamp: int | None) -> int:
    """The first offset to read: clamped into the log, or the newest ``max_records``.

    ``at_timestamp`` is ListOffsets' answer for the request's timestamp (-1: no record that
    late, so the read starts, and ends, at the high watermark)."""
    if request.timestamp_ms is not None:
        return high_watermark if at_timestamp is None or at_timestamp < 0 else at_timestamp
    if request.offset is not None:
        return min(max(request.offset, log_start), high_watermark)
    return max(log_start, high_watermark - request.max_records)


def _client_config(key: str, secret: str, max_bytes: int) -> dict[str, object]:
    config: dict[str, object] = {
        "bootstrap.servers": settings.BROWSER_BOOTSTRAP_SERVERS,
        "security.protocol": settings.BROWSER_SECURITY_PROTOCOL,
        "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": key, "sasl.password": secret,
        "group.id": BROWSER_GROUP, "enable.auto.commit": False, "enable.partition.eof": True,
        "client.id": "kafkasaas-console-browser", "fetch.wait.max.ms": 100,
        # fetch no more than the bound (librdkafka wants message.max.bytes <= fetch.max.bytes;
        # a larger record still arrives whole, as in Kafka), and prefetch little beyond it
        "max.partition.fetch.bytes": max(max_bytes, 1024), "fetch.max.bytes": max(max_bytes, 1024),
        "message.max.bytes": max(max_bytes, 1024),
        "queued.max.messages.kbytes": max(1, max_bytes >> 10), "queued.min.messages": 1,
        "socket.timeout.ms": int(settings.KAFKA_ADMIN_TIMEOUT_S * 1000),
    }
    if settings.SSL_CA_LOCATION and settings.BROWSER_SECURITY_PROTOCOL.endswith("SSL"):
        config["ssl.ca.location"] = settings.SSL_CA_LOCATION
    return config


def _error_text(error: KafkaError) -> str:
    if error.code() in NOT_READABLE:
        return "no such topic or partition, or this key may not read it (ACLs)"
    return f"{error.name()}: {error.str()}"


def _record(message: object, request: BrowseRequest) -> BrowsedRecord:
    kind, timestamp = message.timestamp()  # type: ignore[attr-defined]
    headers = message.headers() or []  # type: ignore[attr-defined]
    key, value = message.key(), message.value()  # type: ignore[attr-defined]
    size = len(key or b"") + len(value or b"") + sum(len(k) + len(v or b"") for k, v in headers)
    return BrowsedRecord(
        message.partition(), message.offset(),  # type: ignore[attr-defined]
        None if kind == TIMESTAMP_NOT_AVAILABLE else timestamp,
        render(key, request.format), render(value, request.format),
        [(k, render(v, request.format)) for k, v in headers], size)


def read_records(key: str, secret: str, topic: str, request: BrowseRequest) -> BrowseResult:
    """Read as the API key, from the start :func:`start_offset` picks, within the bounds."""
    result = BrowseResult()
    consumer = Consumer(_client_config(key, secret, request.max_bytes))
    timeout = float(settings.KAFKA_ADMIN_TIMEOUT_S)
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            result.error = _error_text(metadata.error) if metadata and metadata.error else \
                "no such topic"
            return result
        result.partitions = len(metadata.partitions)
        if request.partition not in metadata.partitions:
            result.error = f"topic {topic} has no partition {request.partition}"
            return result
        tp = TopicPartition(topic, request.partition)
        log_start, high = consumer.get_watermark_offsets(tp, timeout=timeout)
        result.log_start, result.high_watermark = log_start, high
        at = None
        if request.timestamp_ms is not None:
            found = consumer.offsets_for_times(
                [TopicPartition(topic, request.partition, request.timestamp_ms)], timeout)[0]
            at = found.offset if found.offset != OFFSET_END else -1
        first = start_offset(request, log_start, high, at)
        if first >= high:
            return result
        consumer.assign([TopicPartition(topic, request.partition, first)])
        _consume(consumer, request, high, result)
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        result.error = _error_text(error) if error is not None else str(exc)
    finally:
        consumer.close()
    return result


def _consume(consumer: Consumer, request: BrowseRequest, high: int, result: BrowseResult) -> None:
    read_bytes, deadline = 0, time.monotonic() + READ_BUDGET_S
    while True:
        if time.monotonic() >= deadline:
            result.stopped = f"time budget of {READ_BUDGET_S:g} s spent (quota throttling?)"
            return
        for message in consumer.consume(min(100, request.max_records - len(result.records)), 0.2):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return
                if error.code() in IGNORED or (error.retriable() and not error.fatal()):
                    continue  # the unused group's coordinator, or a transient failure
                result.error = _error_text(error)
                return
            record = _record(message, request)
            if result.records and read_bytes + record.size > request.max_bytes:
                result.stopped = f"max bytes ({request.max_bytes}) reached"
                return
            result.records.append(record)
            read_bytes += record.size
            if record.offset + 1 >= high:
                return
            if len(result.records) >= request.max_records:
                result.stopped = f"max records ({request.max_records}) reached"
                return


def read_as(api_key: ApiKey, secret: str, topic: str, request: BrowseRequest) -> BrowseResult:
    """:func:`read_records` after checking the secret against the key's hash here, so a
    wrong secret gets a plain answer instead of a failed SASL login."""
    if not check_password(secret, api_key.secret_hash):
        return BrowseResult(error=f"the secret does not match API key {api_key.key}",
                            authenticated=False)
    return read_records(api_key.key, secret, topic, request)
