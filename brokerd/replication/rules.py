"""The replication decisions, as pure functions over plain values (no clock, no I/O).

Kafka's rules, each in one place so it can be tested in milliseconds:

- *caught up* (``Replica.updateFetchState``): a follower is caught up as of this fetch if it
  asked for the leader's log end offset or beyond; else as of its previous fetch if it now
  asks for at least the log end offset the leader had at that previous fetch (it has
  everything that existed then).  A follower lagging longer than ``replica.lag.time.max.ms``
  leaves the ISR; one whose broker is not registered only after twice that (see
  :func:`out_of_sync`).
- *high watermark* (leader): the minimum log end offset over the ISR, never moving back.
- *ISR expansion*: a follower outside the ISR rejoins once its log end offset reached the
  high watermark and the first offset of the current leader epoch.
- *truncation* (KIP-279): where a follower cuts its log before fetching from a new leader,
  from the leader's OffsetForLeaderEpoch answer, or from the ``diverging_epoch`` of a
  Fetch answer (*truncation on fetch*, Kafka 2.7+: the leader checks each fetch's
  ``last_fetched_epoch`` against its own epochs, see :func:`diverging_epoch`).
- *epoch fencing* (KIP-320): a request naming the replica's leader epoch is served only in
  that epoch (Fetch, ListOffsets, OffsetForLeaderEpoch).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from brokerd.protocol import ErrorCode

UNDEFINED = -1
# A member of the ISR whose broker is not registered leaves it only after this many lag
# times (see :func:`out_of_sync`): the controller removes dead brokers itself.
DEAD_REPLICA_LAG_FACTOR = 2


class FollowerState(NamedTuple):
    """What the leader knows of one follower replica (all times in ms).  A tuple: a new
    one per follower fetch, twice per acks=all request on the leader, and a frozen
    dataclass took several times as long to build."""

    log_end_offset: int = UNDEFINED
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = UNDEFINED
    last_fetch_ms: int = 0


_UNKNOWN = FollowerState()  # a follower never heard from (shared: states are immutable)


def record_fetch(state: FollowerState, fetch_offset: int, leader_leo: int,
                 now_ms: int) -> FollowerState:
    """The follower asked for ``fetch_offset`` while the leader's LEO is ``leader_leo``."""
    if fetch_offset >= leader_leo:
        caught_up = now_ms
    elif fetch_offset >= state.last_fetch_leader_leo >= 0:
        caught_up = max(state.last_caught_up_ms, state.last_fetch_ms)
    else:
        caught_up = state.last_caught_up_ms
    return FollowerState(fetch_offset, caught_up, leader_leo, now_ms)


def repeat_fetch(state: FollowerState, now_ms: int) -> FollowerState:
    """The follower fetched again at ``now_ms`` from the same offset while the leader's log
    end had not moved since its last recorded fetch (an idle partition of its fetch
    session, KIP-227): :func:`record_fetch` with the values of that last fetch.  Nothing
    is implied before a first recorded fetch in this leadership term."""
    if state.last_fetch_leader_leo == UNDEFINED or now_ms <= state.last_fetch_ms:
        return state
    return record_fetch(state, state.log_end_offset, state.last_fetch_leader_leo, now_ms)


def reset_for_leadership(state: FollowerState, in_isr: bool, now_ms: int) -> FollowerState:
    """A new leadership term: ISR members get a full lag allowance from now (Kafka sets
    their last caught-up time to the moment of becoming leader); others start unknown."""
    return FollowerState(last_caught_up_ms=now_ms if in_isr else 0)


def leader_high_watermark(current: int, leader_id: int, leader_leo: int, isr: tuple[int, ...],
                          followers: dict[int, FollowerState]) -> int:
    """min LEO over the ISR (the leader counts with its own LEO); never below ``current``."""
    offsets = [leader_leo]
    for replica in isr:
        if replica != leader_id:
            offsets.append(followers.get(replica, FollowerState()).log_end_offset)
    return max(current, min(offsets))


def out_of_sync(leader_id: int, isr: tuple[int, ...], followers: dict[int, FollowerState],
                now_ms: int, lag_time_max_ms: int,
                is_live: Callable[[int], bool] | None = None) -> tuple[int, ...]:
    """ISR members (never the leader) not caught up within ``lag_time_max_ms``; members
    whose broker is not registered (``is_live`` false) within
    ``DEAD_REPLICA_LAG_FACTOR`` times that.

    Why the longer wait for a dead broker: the controller drops it from every ISR as it
    elects new leaders, and a leader proposing the same shrink meanwhile only races that
    write (version-checked, so one of the two is refused and retried).  In the
    30,000-partition failover a slow election let the lag time run out first, and one new
    leader proposed, logged and queued 25,290 shrinks of the dead broker while it was
    taking over 10,000 leaderships.  Once the longer wait is over the leader shrinks
    anyway (a controller that never got to it)."""
    lagging = []
    for replica in isr:
        behind_ms = now_ms - followers.get(replica, _UNKNOWN).last_caught_up_ms
        if (replica != leader_id and behind_ms > lag_time_max_ms
                and (is_live is None or is_live(replica)
                     or behind_ms > DEAD_REPLICA_LAG_FACTOR * lag_time_max_ms)):
            lagging.append(replica)
    return tuple(lagging)


def may_join_isr(follower: FollowerState, high_watermark: int, epoch_start_offset: int) -> bool:
    """A follower outside the ISR has caught up to the committed data of this epoch."""
    return (follower.log_end_offset >= high_watermark
            and follower.log_end_offset >= epoch_start_offset)


def follower_high_watermark(leader_high_watermark: int, log_end_offset: int) -> int:
    """A follower exposes no more than it holds and no more than the leader committed."""
    return min(leader_high_watermark, log_end_offset)


def truncation_offset(requested_epoch: int, answer_epoch: int, answer_end_offset: int,
                      log_end_offset: int, own_end_offset_for: int,
                      high_watermark: int) -> int:
    """Where a follower truncates before fetching from a new leader (KIP-279).

    ``requested_epoch`` is the follower's latest epoch, asked of the leader; the leader
    answered (``answer_epoch``, ``answer_end_offset``).  ``own_end_offset_for`` is the
    follower's own end offset for ``answer_epoch`` (from its epoch cache).

    - undefined answer (the leader knows no such epoch, or the follower has none): keep
      only what is known to be committed, the follower's high watermark;
    - the same epoch back: both logs agree up to the leader's end of that epoch;
    - an older epoch back (the leader never wrote ours): the logs agree up to the smaller
      of the two ends of that older epoch.
    The result never exceeds the follower's own log end.
    """
    if answer_epoch == UNDEFINED or answer_end_offset == UNDEFINED:
        return min(high_watermark, log_end_offset)
    if answer_epoch == requested_epoch:
        return min(answer_end_offset, log_end_offset)
    return min(answer_end_offset, own_end_offset_for, log_end_offset)


def diverging_epoch(last_fetched_epoch: int, fetch_offset: int, leader_epoch: int,
                    leader_end_offset: int) -> tuple[int, int] | None:
    """The Fetch answer's ``diverging_epoch`` (epoch, end offset), or None when the fetcher's
    log agrees with the leader's up to ``fetch_offset``.

    ``last_fetched_epoch`` is the epoch of the fetcher's last batch (-1: not given, never
    diverging); (``leader_epoch``, ``leader_end_offset``) is the leader's own
    OffsetForLeaderEpoch answer for it.  Kafka's rule (``Partition.fetchRecords``): the
    logs diverge when the leader never wrote that epoch (its answer is an older one) or
    ended it before the fetch offset.  Such a fetch returns no records and does not count
    as the follower's log end: the follower truncates (:func:`truncation_offset`) and asks
    again."""
    if last_fetched_epoch < 0:
        return None
    if leader_epoch < last_fetched_epoch or leader_end_offset < fetch_offset:
        return leader_epoch, leader_end_offset
    return None


# Kafka's inter.broker.protocol.version from which followers truncate on fetch (2.7-IV1:
# Fetch v12, whose answers carry ``diverging_epoch``).
TRUNCATION_ON_FETCH_SINCE = (2, 7, 1)
LATEST_INTER_BROKER_PROTOCOL = "3.9"
_PROTOCOL_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?(?:-IV(\d+))?")


def truncates_on_fetch(inter_broker_protocol_version: str) -> bool:
    """Whether followers skip OffsetForLeaderEpoch and truncate from Fetch answers.

    Why a gate: a leader older than that never answers ``diverging_epoch``, so a follower
    that skipped the question would append after a tail the leader never had.  During a
    rolling upgrade from such brokers, operators set the old version until every broker
    runs the new code, as in Kafka.  ``2.7`` without ``-IV<n>`` means its last
    inter-broker version, as in Kafka.  ValueError for anything not of the form
    ``<major>.<minor>[.<patch>][-IV<n>]``."""
    match = _PROTOCOL_VERSION.fullmatch(inter_broker_protocol_version.strip())
    if match is None:
        raise ValueError(f"inter.broker.protocol.version: {inter_broker_protocol_version!r} "
                         "is not a Kafka version such as 2.7, 2.7-IV1 or 3.9")
    major, minor, iv = match.groups()
    return (int(major), int(minor), int(iv) if iv is not None else 99) >= TRUNCATION_ON_FETCH_SINCE


def epoch_error(requested: int, current: int) -> ErrorCode:
    """KIP-320: a client with a stale epoch is fenced; one ahead of us must retry later
    (-1: the client names no epoch)."""
    if requested == -1 or requested == current:
        return ErrorCode.NONE
    return ErrorCode.FENCED_LEADER_EPOCH if requested < current else ErrorCode.UNKNOWN_LEADER_EPOCH
