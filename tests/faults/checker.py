"""The fault tests' workload checker (Jepsen-style, our own): what a history of writes,
acknowledgements and reads says about the promises Kafka makes.

Pure: it takes what the workload recorded and what a final read found, and returns a
:class:`Report`; the fault tests assert the report is clean and print it otherwise.

Values are unique strings ``<producer>-<n>`` with ``n`` increasing per producer, so
every anomaly names the record it concerns:

- lost: acknowledged (delivery report without error) but absent from the final read;
- moved: acknowledged at one offset but found at another (or another value there);
- duplicates: one value stored more than once (an idempotent producer must never do it);
- order violations: one producer's values out of order within a partition;
- divergent: an offset that holds different batches on two replicas after healing;
- unconsumed: acknowledged well after the fault healed but never read by the group
  (consumers stuck longer than the bound).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ack:
    value: str
    partition: int
    offset: int
    at: float  # when the acknowledgement arrived (wall clock, seconds)


@dataclass(frozen=True)
class Stored:
    partition: int
    offset: int
    value: str


@dataclass
class Report:
    acknowledged: int = 0
    stored: int = 0
    consumed: int = 0
    lost: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    order_violations: list[str] = field(default_factory=list)
    divergent: list[str] = field(default_factory=list)
    unconsumed: list[str] = field(default_factory=list)

    @property
    def anomalies(self) -> dict[str, list[str]]:
        return {name: found for name, found in (
            ("lost", self.lost), ("moved", self.moved), ("duplicates", self.duplicates),
            ("order violations", self.order_violations), ("divergent", self.divergent),
            ("unconsumed", self.unconsumed)) if found}

    @property
    def clean(self) -> bool:
        return not self.anomalies

    def table(self) -> str:
        rows = [("acknowledged", self.acknowledged), ("stored", self.stored),
                ("consumed", self.consumed)]
        rows += [(name, len(getattr(self, attr))) for name, attr in (
            ("lost", "lost"), ("moved", "moved"), ("duplicates", "duplicates"),
            ("order violations", "order_violations"), ("divergent replicas", "divergent"),
            ("unconsumed", "unconsumed"))]
        lines = [f"{name:>20}  {count}" for name, count in rows]
        for name, found in self.anomalies.items():
            lines.append(f"{name}: {', '.join(found[:10])}{' ...' if len(found) > 10 else ''}")
        return "\n".join(lines)


def producer_and_number(value: str) -> tuple[str, int]:
    producer, _, number = value.rpartition("-")
    return producer, int(number)


def check(acks: Iterable[Ack], stored: Iterable[Stored], consumed: Iterable[str],
          replicas: Mapping[int, Mapping[int, Mapping[int, tuple[int, int]]]] | None = None,
          must_consume: tuple[float, float] | None = None) -> Report:
    """Check a history.  ``replicas``: partition -> broker -> base offset -> (last offset,
    CRC) read from each replica's files after healing.  ``must_consume``: acknowledgements
    within this time window must have been consumed by the group (None: not checked)."""
    acks, stored, consumed_set = list(acks), list(stored), set(consumed)
    report = Report(acknowledged=len(acks), stored=len(stored), consumed=len(consumed_set))
    at_offset = {(s.partition, s.offset): s.value for s in stored}
    counts: dict[str, int] = defaultdict(int)
    for record in stored:
        counts[record.value] += 1
    report.duplicates = sorted(value for value, count in counts.items() if count > 1)
    for ack in acks:
        found = at_offset.get((ack.partition, ack.offset))
        if ack.value not in counts:
            report.lost.append(ack.value)
        elif found != ack.value:
            report.moved.append(f"{ack.value}@{ack.partition}:{ack.offset}")
        if must_consume is not None and must_consume[0] <= ack.at <= must_consume[1] \
                and ack.value not in consumed_set:
            report.unconsumed.append(ack.value)
    report.order_violations = order_violations(stored)
    report.divergent = divergent_offsets(replicas or {})
    return report


def order_violations(stored: Iterable[Stored]) -> list[str]:
    """Within each partition, each producer's numbers must increase with the offset."""
    last: dict[tuple[int, str], tuple[int, int]] = {}
    found = []
    for record in sorted(stored, key=lambda s: (s.partition, s.offset)):
        producer, number = producer_and_number(record.value)
        previous = last.get((record.partition, producer))
        if previous is not None and number <= previous[0]:
            found.append(f"{record.value}@{record.partition}:{record.offset} after "
                         f"{producer}-{previous[0]}@{previous[1]}")
        last[(record.partition, producer)] = (number, record.offset)
    return found


def divergent_offsets(replicas: Mapping[int, Mapping[int, Mapping[int, tuple[int, int]]]]
                      ) -> list[str]:
    """Offsets where two replicas hold different batches: every base offset present on
    any replica must be present, with the same last offset and CRC, on all of them up to
    the shortest replica's end (a replica may lag, never disagree)."""
    found = []
    for partition, by_broker in sorted(replicas.items()):
        ends = {broker: max((last for last, _ in batches.values()), default=-1)
                for broker, batches in by_broker.items()}
        common_end = min(ends.values(), default=-1)
        bases = sorted({base for batches in by_broker.values() for base in batches
                        if base <= common_end})
        for base in bases:
            seen = {broker: batches.get(base) for broker, batches in by_broker.items()}
            if len(set(seen.values())) > 1:
                found.append(f"{partition}:{base} {seen}")
    return found
