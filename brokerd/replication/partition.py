"""One partition replica hosted by this broker: its role, leader epoch and high watermark.

Why a layer above the log: leadership is not a property of bytes on disk.  The log stores
batches; the :class:`Partition` knows whether this replica leads or follows, in which epoch
(stamped into every batch the leader appends), and how far consumers may read (the high
watermark), computed here and nowhere else (:mod:`brokerd.replication.rules`).

Leader: tracks each follower's log end offset from its fetches, advances the high
watermark to the minimum over the ISR, names the ISR change it wants (shrink after
``replica.lag.time.max.ms``, expand when a follower caught up), and completes parked
``acks=all`` waits when the high watermark passes them.  Follower: appends what the
fetcher brings and takes min(leader's high watermark, own log end).

Notifications (:class:`Listeners`): ``appended``, ``high_watermark_advanced`` and
``role_changed`` (leader/follower/stopped, a new epoch or replica set), for long-poll
fetches and fetch sessions.  An ISR change within a term is not a role change (Kafka does
not complete delayed fetches on one either): a fetch session marks a partition pending on
each notification, and a parked fetch re-reads every pending partition each time it
wakes, so in a 30,000-partition failover the 20,000 ISR-only states (the dead broker
dropped) had the survivors re-read tens of thousands of idle session partitions that had
nothing to say.  A follower whose fetch session (KIP-227) holds this partition without
naming it still fetches it at its last offset every time: ``session_fetches`` tells the
ISR check when (see :func:`rules.repeat_fetch`).

Epochs never go backwards: a state with an older leader epoch is ignored.
Not thread-safe: used from the asyncio loop thread only.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path

from brokerd.replication import rules
from brokerd.replication.listeners import Listener, Listeners
from brokerd.storage import AppendResult, Log, ReadResult
from brokerd.storage.errors import LogDirFailure

NO_LEADER = -1


class Partition:
    """A partition replica this broker hosts, as leader or follower."""

    def __init__(self, topic: str, index: int, topic_id: uuid.UUID, log: Log,
                 broker_id: int) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.broker_id = broker_id
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.replicas: tuple[int, ...] = ()
        # Replicas a reassignment is removing: they keep fetching (and count while in the
        # ISR) until it completes, but never rejoin the ISR, so the controller's final
        # "ISR := ISR minus removed" cannot be undone by a fetch racing its assignment write.
        self.removing: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.zk_version = -1
        self.epoch_start_offset = 0
        self.followers: dict[int, rules.FollowerState] = {}
        self.proposed_isr: tuple[int, ...] | None = None  # an ISR write in flight
        self.appended = Listeners()
        self.high_watermark_advanced = Listeners()
        self.role_changed = Listeners()
        # Follower replica -> when its fetch session last fetched this partition implicitly
        # (None: not implied now, e.g. the last answer was an error).
        self.session_fetches: dict[int, Callable[[], int | None]] = {}
        self._commit_waits: list[tuple[int, asyncio.Future[bool]]] = []
        # Called once per failed write with the log directory and the error (the replica
        # manager passes it on to the broker, which takes the directory offline).
        self.on_log_dir_failure: Callable[[Path, OSError], None] = lambda _dir, _exc: None

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def high_watermark(self) -> int:
        return int(self.log.high_watermark)

    @property
    def log_start_offset(self) -> int:
        return int(self.log.log_start_offset)

    @property
    def log_end_offset(self) -> int:
        return int(self.log.log_end_offset)

    def min_isr_violation(self) -> str | None:
        """Why an ``acks=all`` write may not be taken or acknowledged now (Kafka's
        ``min.insync.replicas`` rule, checked before the append and again when the high
        watermark passes it), or None when the ISR is large enough."""
        required = self.log.config.min_insync_replicas
        if len(self.isr) < required:
            return f"ISR has {len(self.isr)} of the {required} replicas min.insync.replicas needs"
        return None

    def readable_end(self, for_replica: bool) -> int:
        """Where a fetch stops: a follower reads to the log end, a consumer to the high
        watermark (what every in-sync replica holds)."""
        return self.log_end_offset if for_replica else self.high_watermark

    def read(self, offset: int, max_bytes: int, for_replica: bool,
             min_one_batch: bool) -> ReadResult:
        """Whole batches from ``offset`` up to :meth:`readable_end` (see ``Log.read``)."""
        return self.log.read(offset, max_bytes,
                             max_offset=None if for_replica else self.high_watermark,
                             min_one_batch=min_one_batch)

    # ---- roles ---------------------------------------------------------------------

    def become_leader(self, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...],
                      zk_version: int, now_ms: int) -> bool:
        """Lead in ``leader_epoch`` (or take a fresher ISR/version within the same term).
        False when the state is stale (an older epoch, or an older version of this one)."""
        if leader_epoch < self.leader_epoch:
            return False
        new_term = leader_epoch > self.leader_epoch or not self.is_leader
        if not new_term and zk_version < self.zk_version:
            return False
        role_changed = new_term or replicas != self.replicas
        self.replicas, self.isr, self.zk_version = replicas, isr, zk_version
        if new_term:
            self.leader_id, self.leader_epoch = self.broker_id, leader_epoch
            self.epoch_start_offset = self.log_end_offset
            self.log.leader_epoch_cache.assign(leader_epoch, self.log_end_offset)
            self.proposed_isr = None
            self.followers = {replica: rules.reset_for_leadership(
                rules.FollowerState(), replica in isr, now_ms)
                for replica in replicas if replica != self.broker_id}
        else:
            for replica in replicas:
                if replica != self.broker_id:
                    self.followers.setdefault(replica, rules.FollowerState())
        self._maybe_advance_high_watermark()
        if role_changed:
            self.role_changed.fire()
        return True

    def become_follower(self, leader_id: int, leader_epoch: int, replicas: tuple[int, ...],
                        isr: tuple[int, ...], zk_version: int) -> bool:
        """Follow ``leader_id`` (NO_LEADER: nobody to follow yet).  True when the leader
        or epoch changed, i.e. the fetcher must (re)start this partition with truncation;
        False for a stale state or one that changes neither."""
        if leader_epoch < self.leader_epoch:
            return False
        changed = leader_epoch != self.leader_epoch or leader_id != self.leader_id
        role_changed = changed or replicas != self.replicas
        self.replicas, self.isr, self.zk_version = replicas, isr, max(zk_version,
                                                                       self.zk_version)
        if changed:
            self.leader_id, self.leader_epoch = leader_id, leader_epoch
            self.followers, self.proposed_isr = {}, None
            self.abandon_commit_waits()
        if role_changed:
            self.role_changed.fire()
        return changed

    def stop(self) -> None:
        """No longer hosted here: parked acks=all waits fail as leadership lost."""
        self.leader_id = NO_LEADER
        self.abandon_commit_waits()
        self.role_changed.fire()

    # ---- leader ---------------------------------------------------------------------

    def append_as_leader(self, records: memoryview) -> AppendResult:
        """Append a produce request's record set, advance the high watermark, wake readers.

        Raises the storage errors (each with an ``error_code``) unchanged; nothing is
        stored when one is raised.
        """
        try:
            result = self.log.append_as_leader(records, self.leader_epoch)
        except OSError as exc:
            raise self._log_dir_failed(exc) from exc
        if not result.duplicate:
            self._maybe_advance_high_watermark()
            self.appended.fire()
        return result

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int, bumped: bool = False) -> AppendResult:
        """WriteTxnMarkers: end a transaction on this leader with a control batch (see
        ``Log.append_marker``), then as for any append."""
        result = self.log.append_marker(producer_id, producer_epoch, commit, coordinator_epoch,
                                        self.leader_epoch, bumped)
        self._maybe_advance_high_watermark()
        self.appended.fire()
        return result

    def record_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> None:
        """A follower fetches from ``fetch_offset``: that is its log end offset now."""
        state = self.followers.get(replica_id, rules.FollowerState())
        self.followers[replica_id] = rules.record_fetch(
            state, fetch_offset, self.log_end_offset, now_ms)
        self._maybe_advance_high_watermark()

    def begin_isr_change(self, now_ms: int, lag_time_max_ms: int,
                         fetched_by: int | None = None,
                         may_admit: Callable[[int], bool] | None = None,
                         is_live: Callable[[int], bool] | None = None
                         ) -> tuple[int, ...] | None:
        """The ISR this leader should propose now (lagging members out; ``fetched_by``,
        the replica whose fetch prompted this, in if it caught up), marked in flight until
        :meth:`isr_change_done`; None when no change is due or a proposal is already in
        flight (at most one per partition).  Only a fetch admits a replica: a dead one's
        last known offset may still equal an idle high watermark.  A fetch through a
        follower's session that did not name this partition counts too, for replicas
        ``may_admit`` allows (its idle partitions are never named again).  A member whose
        broker is not registered (``is_live`` false) lags out only after the longer wait of
        :func:`rules.out_of_sync`: the controller removes it."""
        if not self.is_leader or self.proposed_isr is not None:
            return None
        fetched = self._apply_session_fetches()  # usually every follower, all in the ISR
        candidates = [replica for replica in fetched if replica not in self.isr
                      and may_admit is not None and may_admit(replica)]
        if fetched_by is not None and fetched_by not in self.isr:
            candidates.append(fetched_by)
        lagging = rules.out_of_sync(self.broker_id, self.isr, self.followers, now_ms,
                                    lag_time_max_ms, is_live)
        joining = tuple(replica for replica in dict.fromkeys(candidates)
                        if replica in self.replicas and rules.may_join_isr(
                            self.followers[replica], self.high_watermark,
                            self.epoch_start_offset))
        if not lagging and not joining:
            return None
        self.proposed_isr = tuple(r for r in self.isr if r not in lagging) + joining
        return self.proposed_isr

    def _apply_session_fetches(self) -> list[int]:
        """Count the fetches followers made of this partition through their sessions
        without naming it (an idle, caught-up follower sends nothing about it); returns
        the replicas that fetched so since the last count."""
        fetched = []
        for replica, fetched_ms in self.session_fetches.items():
            when = fetched_ms()
            state = self.followers.get(replica)
            if when is None or state is None or when <= state.last_fetch_ms:
                continue
            self.followers[replica] = rules.repeat_fetch(state, when)
            fetched.append(replica)
        return fetched

    def isr_change_done(self, leader_epoch: int, isr: tuple[int, ...] | None,
                        zk_version: int) -> None:
        """The proposal finished: the stored ``isr`` at ``zk_version`` (None: rejected or
        failed; the fresh state arrives through ZooKeeper and a later proposal retries)."""
        self.proposed_isr = None
        if isr is not None and self.is_leader and leader_epoch == self.leader_epoch:
            self.isr, self.zk_version = isr, zk_version
        self._maybe_advance_high_watermark()

    def _maybe_advance_high_watermark(self) -> None:
        if not self.is_leader:
            return
        # While an expansion is in flight the joining replica already counts, so the high
        # watermark never passes what a member of the coming ISR holds (Kafka's maximal ISR).
        isr = tuple(dict.fromkeys(self.isr + (self.proposed_isr or ())))
        new = rules.leader_high_watermark(self.high_watermark, self.broker_id,
                                          self.log_end_offset, isr, self.followers)
        self._set_high_watermark(new)

    # ---- follower -------------------------------------------------------------------

    def append_as_follower(self, records: memoryview, leader_high_watermark: int) -> None:
        """Store fetched batches (offsets and epochs assigned by the leader)."""
        if len(records):
            try:
                self.log.append_as_follower(records)
            except OSError as exc:
                raise self._log_dir_failed(exc) from exc
            self.appended.fire()
        self.update_follower_high_watermark(leader_high_watermark)

    def _log_dir_failed(self, exc: OSError) -> LogDirFailure:
        """A write to the log's directory failed: report it (the broker takes the
        directory offline) and answer KAFKA_STORAGE_ERROR.  The log's own size did not
        advance, so the partial bytes are overwritten or truncated by recovery."""
        log_dir = self.log.directory.parent
        self.on_log_dir_failure(log_dir, exc)
        return LogDirFailure(f"log dir {log_dir} failed: {exc}", log_dir)

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        self._set_high_watermark(rules.follower_high_watermark(leader_high_watermark,
                                                               self.log_end_offset))

    def truncate_to(self, offset: int) -> None:
        self.log.truncate_to(offset)

    # ---- high watermark and acks=all ------------------------------------------------

    def _set_high_watermark(self, offset: int) -> None:
        before = self.high_watermark
        self.log.high_watermark = offset
        if self.high_watermark > before:
            self._complete_commit_waits()
            self.high_watermark_advanced.fire()

    def wait_for_commit(self, last_offset: int) -> asyncio.Future[bool]:
        """A future that turns True once the high watermark passed ``last_offset`` (every
        in-sync replica holds it), or False if this replica stops leading first."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self.high_watermark > last_offset:
            future.set_result(True)
        elif not self.is_leader:
            future.set_result(False)
        else:
            self._commit_waits.append((last_offset, future))
        return future

    def _complete_commit_waits(self) -> None:
        if not self._commit_waits:
            return
        high_watermark = self.high_watermark
        waiting = []
        for last_offset, future in self._commit_waits:
            if future.done():
                continue
            if last_offset < high_watermark:
                future.set_result(True)
            else:
                waiting.append((last_offset, future))
        self._commit_waits = waiting

    def abandon_commit_waits(self) -> None:
        """Leadership is gone: every parked wait answers False."""
        waits, self._commit_waits = self._commit_waits, []
        for _, future in waits:
            if not future.done():
                future.set_result(False)

    # ---- listeners (long-poll fetches) ---------------------------------------------

    def add_listener(self, for_replica: bool, listener: Listener) -> None:
        """Followers wake on appends; consumers when the high watermark advances."""
        (self.appended if for_replica else self.high_watermark_advanced).add(listener)

    def remove_listener(self, for_replica: bool, listener: Listener) -> None:
        (self.appended if for_replica else self.high_watermark_advanced).remove(listener)
