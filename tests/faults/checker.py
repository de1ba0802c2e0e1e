"""The fault tests' workload checker (Jepsen-style, our own): what a history of writes,
acknowledgements and reads says about the promises Kafka makes.

Pure: it takes what the workload recorded and what a final read found, and returns a
:class:`Report`; the fault tests assert the report is clean and print it otherwise.

Values are unique strings ``<producer>-<n>`` with ``n`` increasing per producer (and per
partition within one transaction, whose values are ``<transaction>-<n>``), so every
anomaly names the record it concerns.  What a history of writes and a final
read_committed read say about delivery — lost, duplicated, aborted, torn, phantom writes,
write-order cycles — is judged by the transactions' checker
(:mod:`tests.support.txn_checker`), to which each acknowledged idempotent record is a
committed one-write transaction and each failed one a transaction of unknown outcome;
this module adds what only a log can show:

- moved: acknowledged at one offset but found at another (or another value there).  An
  acknowledgement may carry no offset: librdkafka acks a batch "implicitly", without
  offsets, when a later batch of the same producer succeeds while the earlier one is
  waiting to be retried after an error that leaves it possibly persisted (a broker's
  REQUEST_TIMED_OUT for acks=all, say); such a record is checked for loss, duplication
  and order like any other, and has no offset to check;
- order violations: one producer's values out of order within a partition;
- divergent: an offset that holds different batches on two replicas after healing;
- unconsumed: acknowledged well after the fault healed but never read by the group
  (consumers stuck longer than the bound).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tests.support import txn_checker
from tests.support.txn_checker import TxnOutcome


@dataclass(frozen=True)
class Ack:
    value: str
    partition: int
    offset: int | None  # None: acknowledged implicitly (see the module's docstring)
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
    transactions: dict[str, int] = field(default_factory=dict)  # outcome -> count
    lost: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    aborted_reads: list[str] = field(default_factory=list)
    torn: list[str] = field(default_factory=list)
    phantoms: list[str] = field(default_factory=list)
    cycles: list[str] = field(default_factory=list)
    order_violations: list[str] = field(default_factory=list)
    divergent: list[str] = field(default_factory=list)
    unconsumed: list[str] = field(default_factory=list)

    ANOMALIES = (("lost", "lost"), ("moved", "moved"), ("duplicates", "duplicates"),
                 ("aborted reads", "aborted_reads"), ("torn transactions", "torn"),
                 ("phantoms", "phantoms"), ("write cycles", "cycles"),
                 ("order violations", "order_violations"), ("divergent replicas", "divergent"),
                 ("unconsumed", "unconsumed"))

    @property
    def anomalies(self) -> dict[str, list[str]]:
        return {name: found for name, attr in self.ANOMALIES
                if (found := getattr(self, attr))}

    @property
    def clean(self) -> bool:
        return not self.anomalies

    def table(self) -> str:
        rows = [("acknowledged", self.acknowledged), ("stored", self.stored),
                ("consumed", self.consumed)]
        rows += [(f"transactions {status}", count)
                 for status, count in sorted(self.transactions.items())]
        rows += [(name, len(getattr(self, attr))) for name, attr in self.ANOMALIES]
        lines = [f"{name:>22}  {count}" for name, count in rows]
        for name, found in self.anomalies.items():
            lines.append(f"{name}: {', '.join(found[:10])}{' ...' if len(found) > 10 else ''}")
        return "\n".join(lines)


def producer_and_number(value: str) -> tuple[str, int]:
    producer, _, number = value.rpartition("-")
    return producer, int(number)


def check(acks: Iterable[Ack], stored: Iterable[Stored], consumed: Iterable[str],
          replicas: Mapping[int, Mapping[int, Mapping[int, tuple[int, int]]]] | None = None,
          must_consume: tuple[float, float] | None = None,
          transactions: Iterable[TxnOutcome] = (),
          unacknowledged: Iterable[tuple[int, str]] = ()) -> Report:
    """Check a history.  ``stored``: the final read_committed read.  ``replicas``:
    partition -> broker -> base offset -> (last offset, CRC) read from each replica's
    files after healing.  ``must_consume``: acknowledgements within this time window must
    have been consumed by the group (None: not checked).  ``transactions``: the
    transactional writer's outcomes; ``unacknowledged``: (partition, value) of idempotent
    sends that failed (they may or may not be stored)."""
    acks, stored, consumed_set = list(acks), list(stored), set(consumed)
    transactions = list(transactions)
    report = Report(acknowledged=len(acks), stored=len(stored), consumed=len(consumed_set),
                    transactions=dict(sorted(
                        Counter(t.status for t in transactions).items())))
    delivery = txn_checker.check(
        [*(one_write(ack.partition, ack.value, "committed") for ack in acks),
         *(one_write(partition, value, "unknown") for partition, value in unacknowledged),
         *transactions],
        observed(stored))
    report.lost = [value.decode() for _, _, value in delivery.lost]
    report.duplicates = [value.decode() for value in delivery.duplicates]
    report.aborted_reads = [value.decode() for value in delivery.aborted_reads]
    report.phantoms = [value.decode() for value in delivery.phantoms]
    report.torn, report.cycles = delivery.torn, [" -> ".join(c) for c in delivery.cycles]
    at_offset = {(s.partition, s.offset): s.value for s in stored}
    lost = set(report.lost)
    for ack in acks:
        if ack.value not in lost and ack.offset is not None \
                and at_offset.get((ack.partition, ack.offset)) != ack.value:
            report.moved.append(f"{ack.value}@{ack.partition}:{ack.offset}")
        if must_consume is not None and must_consume[0] <= ack.at <= must_consume[1] \
                and ack.value not in consumed_set:
            report.unconsumed.append(ack.value)
    report.order_violations = order_violations(stored)
    report.divergent = divergent_offsets(replicas or {})
    return report


def one_write(partition: int, value: str, status: str) -> TxnOutcome:
    """An idempotent record as the transactions' checker sees it: a one-write transaction
    of its producer."""
    return TxnOutcome(value, status, ((partition, value.encode()),),
                      writer=producer_and_number(value)[0])


def observed(stored: Iterable[Stored]) -> dict[int, list[bytes]]:
    """Each partition's values in offset order."""
    found: dict[int, list[bytes]] = defaultdict(list)
    for record in sorted(stored, key=lambda s: (s.partition, s.offset)):
        found[record.partition].append(record.value.encode())
    return dict(found)


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
