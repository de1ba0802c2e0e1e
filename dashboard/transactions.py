"""A tenant's open transactions, and an operator's abort of a hanging one.

Read: every broker answers ListTransactions for the transactional ids it coordinates (on the
operator listener names are physical: ``<slug>.<id>``); the tenant's ids in an open state are
then described (DescribeTransactions) by the broker that listed them.  A broker that does not
answer is reported in ``errors`` and the others' answers still shown.

Abort (``kafka-transactions.sh abort``'s purpose): Kafka's tool writes abort markers straight to
the partition leaders, which is meant for transactions the coordinator has lost track of and
leaves a coordinator that does know the transaction in Ongoing.  In brokerd every open
transaction is known to its coordinator, so the console asks the coordinator instead, the way a
restarted producer does: InitProducerId v3 with the transactional id and KIP-360's expected
producer id and epoch.  The coordinator aborts the transaction under a bumped epoch (markers to
every partition, the last stable offset moves on) and thereby fences the hanging producer, as
its own timeout would.  The expected epoch makes the abort hit only the incarnation the
operator confirmed: if it ended or re-initialised meanwhile, the answer is PRODUCER_FENCED and
nothing is aborted.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction

from tenants.audit import Actor, record
from tenants.models import Tenant

from . import kafka
from . import txn_wire as wire

OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
_correlation_ids = itertools.count(1)


@dataclass(frozen=True)
class OpenTransaction:
    transactional_id: str  # without the tenant prefix
    state: str
    age_s: float | None  # since the transaction started; None when the broker did not say
    timeout_ms: int
    producer_id: int
    producer_epoch: int
    partitions: tuple[tuple[str, int], ...]  # topics without the tenant prefix
    coordinator: int  # broker id

    @property
    def hanging(self) -> bool:
        """Older than its own timeout (the coordinator should already have aborted it)."""
        return self.age_s is not None and self.age_s * 1000 > self.timeout_ms


@dataclass
class TenantTransactions:
    transactions: list[OpenTransaction] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # brokers that did not answer


def _correlation_id() -> int:
    return next(_correlation_ids) & 0x7FFFFFFF


def _checked(answered: int, sent: int) -> None:
    if answered != sent:
        raise kafka.KafkaRequestFailed(f"correlation id {answered}, expected {sent}")


def _list(address: tuple[str, int]) -> list[wire.ListedTransaction]:
    correlation_id = _correlation_id()
    answer = kafka.exchange(*address, wire.encode_list_transactions(correlation_id))
    answered, error, listed = wire.decode_list_transactions(answer)
    _checked(answered, correlation_id)
    if error:
        raise kafka.KafkaRequestFailed(f"ListTransactions error {error}")
    return listed


def _describe(address: tuple[str, int], ids: list[str]) -> list[wire.DescribedTransaction]:
    correlation_id = _correlation_id()
    answer = kafka.exchange(*address, wire.encode_describe_transactions(correlation_id, ids))
    answered, described = wire.decode_describe_transactions(answer)
    _checked(answered, correlation_id)
    return described


def _unprefixed(name: str, prefix: str) -> str:
    return name[len(prefix):] if name.startswith(prefix) else name


def open_transaction(described: wire.DescribedTransaction, prefix: str, coordinator: int,
                     now_ms: int) -> OpenTransaction:
    """The console's view of a DescribeTransactions answer (names without ``prefix``)."""
    start = described.start_time_ms
    return OpenTransaction(
        transactional_id=_unprefixed(described.transactional_id, prefix), state=described.state,
        age_s=max(0, now_ms - start) / 1000 if start >= 0 else None,
        timeout_ms=described.timeout_ms, producer_id=described.producer_id,
        producer_epoch=described.producer_epoch,
        partitions=tuple((_unprefixed(topic, prefix), partition)
                         for topic, partition in described.partitions),
        coordinator=coordinator)


def tenant_transactions(tenant: Tenant, admin: kafka.AdminClient | None = None
                        ) -> TenantTransactions:
    """The tenant's open transactions as their coordinators describe them now."""
    prefix = f"{tenant.slug}."
    result = TenantTransactions()
    for broker_id, address in sorted(kafka.broker_addresses(admin or kafka.admin_client()).items()):
        try:
            ids = sorted(t.transactional_id for t in _list(address)
                         if t.transactional_id.startswith(prefix) and t.state in OPEN_STATES)
            described = _describe(address, ids) if ids else []
        except (kafka.KafkaRequestFailed, ValueError) as exc:
            result.errors.append(f"broker {broker_id} did not answer: {exc}")
            continue
        now_ms = int(time.time() * 1000)
        result.transactions += [open_transaction(d, prefix, broker_id, now_ms) for d in described
                                if d.error_code == wire.NONE and d.state in OPEN_STATES]
    result.transactions.sort(key=lambda t: t.transactional_id)
    return result


def _find(physical_id: str, admin: kafka.AdminClient
          ) -> tuple[tuple[str, int], wire.DescribedTransaction]:
    """The coordinator's address and description of ``physical_id`` (others: NOT_COORDINATOR)."""
    failures = []
    for broker_id, address in sorted(kafka.broker_addresses(admin).items()):
        try:
            (described,) = _describe(address, [physical_id])
        except (kafka.KafkaRequestFailed, ValueError) as exc:
            failures.append(f"broker {broker_id}: {exc}")
            continue
        if described.error_code == wire.NONE:
            return address, described
    if failures:
        raise kafka.KafkaRequestFailed("; ".join(failures))
    raise ValidationError("No broker coordinates this transactional id.")


@transaction.atomic
def abort_transaction(actor: Actor, tenant: Tenant, transactional_id: str, producer_id: int,
                      producer_epoch: int, admin: kafka.AdminClient | None = None) -> None:
    """Abort the open transaction of ``transactional_id`` if its producer is still (id, epoch)."""
    admin = admin or kafka.admin_client()
    physical_id = f"{tenant.slug}.{transactional_id}"
    address, described = _find(physical_id, admin)
    if described.state not in OPEN_STATES:
        raise ValidationError(f"The transaction is no longer open ({described.state}).")
    if described.state != "Ongoing":  # the coordinator is already writing its markers
        raise ValidationError(f"The transaction is already ending ({described.state}); its "
                              f"coordinator completes it.")
    if (described.producer_id, described.producer_epoch) != (producer_id, producer_epoch):
        raise ValidationError("The transactional id has a newer producer epoch: nothing aborted.")
    record(actor, tenant, "transaction.abort", physical_id, producer_id=producer_id,
           producer_epoch=producer_epoch, state=described.state,
           partitions=[f"{topic}-{partition}" for topic, partition in described.partitions])
    correlation_id = _correlation_id()
    answer = kafka.exchange(*address, wire.encode_init_producer_id(
        correlation_id, physical_id, described.timeout_ms, producer_id, producer_epoch))
    answered, error, _, _ = wire.decode_init_producer_id(answer)
    _checked(answered, correlation_id)
    if error == wire.PRODUCER_FENCED:
        raise ValidationError("The transaction ended or its producer re-initialised: nothing aborted.")
    if error not in (wire.NONE, wire.CONCURRENT_TRANSACTIONS):
        # CONCURRENT_TRANSACTIONS: the abort is under way (or the transaction was already ending)
        raise ValidationError(f"The coordinator refused the abort (Kafka error {error}).")
