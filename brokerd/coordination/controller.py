"""The controller's ZooKeeper work: leader election after broker loss, controlled
shutdown, preferred-leader election, elections an admin asks for (ElectLeaders),
reassignment (and its replacement or cancellation, AlterPartitionReassignments), first
leadership of new partitions.

How it decides: from the coordinator's :class:`TopicCache` (every broker keeps one, so a
newly elected controller starts with a full picture), with the pure rules of
:mod:`brokerd.coordination.election`.  How it writes: ZooKeeper transactions of
``check(/controller_epoch, version)`` and ``set_data(node, zk_version)`` for up to 100
partitions each, pipelined over all affected partitions (:func:`writes.write_states_fenced`),
through a session of their own that holds no watches (:mod:`.write_session`).
The epoch check fences a deposed controller (its session lost, a successor already bumped
the epoch); the version check catches leaders' concurrent ISR updates, which are re-read
and decided again.  How it tells the brokers: every ~2,000 written states are published to
this broker and pushed to the others (LeaderAndIsr, :mod:`brokerd.coordination.state_push`)
while the rest of the batch is still being written.

Everything it acts on lives in ZooKeeper (broker registrations, request nodes, the
assignment's adding/removing replicas), so a successor resumes any unfinished work by
running :meth:`Controller.resume`.

Thread-safety: none; used only on the coordinator's ZooKeeper thread.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from brokerd.coordination import election, writes, znodes
from brokerd.coordination.assignment import initial_state
from brokerd.coordination.reconnect import through_blips
from brokerd.coordination.topic_cache import ASSIGNMENT, TopicCache
from brokerd.coordination.writes import PartitionKey
from brokerd.coordination.znodes import PartitionRequest, PartitionState, TopicMetadata

log = logging.getLogger(__name__)

# Conflicting writes (a leader changed the ISR meanwhile) are re-read and decided again;
# more rounds than this means something keeps racing us: the next event retries.
MAX_ROUNDS = 5
Decide = Callable[[TopicMetadata, int, PartitionState], PartitionState | None]
# ElectLeaders: each partition's outcome (None: no such partition) and the leader it has
# once the election is written.
ElectionOutcomes = dict[PartitionKey, tuple[election.Requested | None, int]]
# AlterPartitionReassignments: each partition's outcome, and why its replica list was
# refused (INVALID_REPLICAS).
Altering = tuple[election.Altered, str | None]
AlterOutcomes = dict[PartitionKey, Altering]
# A repair moving at least this many leaders logs how long its leader batch took.
LOGGED_BATCH = 100
# (controller epoch, [(a topic's fresh metadata, the states this controller just wrote in
# it: empty for states others wrote that it re-read)]), once per written batch.
Publish = Callable[[int, list[tuple[TopicMetadata, dict[int, PartitionState]]]], None]


class Controller:
    """Acts only while :attr:`active`; the coordinator keeps :attr:`live` and
    :attr:`shutting_down` current from the broker and controlled-shutdown watches."""

    def __init__(self, client: KazooClient, cache: TopicCache, broker_id: int,
                 publish: Publish, states_client: Callable[[], KazooClient] | None = None
                 ) -> None:
        """``states_client``: the session the batched partition-state writes go through
        (:mod:`.write_session`: not the watching one); ``client`` when None."""
        self._client = client
        self._states_client = states_client or (lambda: client)
        self._cache = cache
        self._broker_id = broker_id
        # Hands this broker the states the controller just wrote, without waiting for its
        # own watches to fire and their re-reads (thousands of them after a failover), and
        # through it the other brokers (pushed, see :mod:`.state_feed`).
        self._publish = publish
        self._epoch_version = -1
        self.epoch = 0
        self.active = False
        self.live: set[int] = set()
        self.shutting_down: set[int] = set()
        # broker -> its replicas whose log dir failed (from its registration, KIP-112):
        # such a replica may neither lead nor stay in the ISR.
        self.offline: dict[int, set[PartitionKey]] = {}

    @property
    def eligible(self) -> set[int]:
        """Brokers that may lead or be in an ISR."""
        return self.live - self.shutting_down

    def eligible_for(self, key: PartitionKey, eligible: set[int]) -> set[int]:
        """``eligible`` less the brokers whose replica of ``key`` is offline.  Asked for
        every partition an election looks at (30,000 in a failover at density), where
        almost always no broker has an offline replica at all."""
        if not self.offline:
            return eligible
        lost = {broker for broker, keys in self.offline.items() if key in keys}
        return eligible - lost if lost else eligible

    def activate(self, epoch: int, epoch_version: int) -> None:
        self.epoch, self._epoch_version, self.active = epoch, epoch_version, True

    def resume(self) -> None:
        """A new controller's first pass: repair every partition (leaders lost while no
        controller ran), then pick up pending requests."""
        self.topics_read({name: {ASSIGNMENT} for name in self._cache.topics})
        self.handle_shutdowns()
        self.reassign(writes.pending_requests(self._client, znodes.REASSIGN_PARTITIONS))
        self.elect_preferred(writes.pending_requests(self._client, znodes.PREFERRED_ELECTION))

    # ---- failover ---------------------------------------------------------------------

    def topics_read(self, changed: dict[str, set[int]]) -> None:
        """After the cache re-read ``changed`` (topic cache keys per topic): give new partitions
        their first leader, repair partitions whose leader is gone, and advance
        reassignments whose ISR grew."""
        if not self.active:
            return
        self._remove_leftovers()
        self._initialize(changed)
        keys = [(name, p) for name, parts in changed.items()
                for p in self._partitions(name, parts)]
        self.repair(keys)
        self._advance_reassignments([name for name in changed if self._reassigning(name)])

    def _remove_leftovers(self) -> None:
        """Delete the topic nodes the cache found holding no assignment (see
        :attr:`TopicCache.leftovers`): no client can use, delete or re-create such a topic
        otherwise.  The nodes' watches then report them gone on every broker."""
        for name in sorted(self._cache.leftovers):
            log.warning("removing topic node %s, which holds no assignment", name)
            writes.delete_topic(self._client, name)
            self._cache.leftovers.discard(name)

    def brokers_changed(self, bounced: set[int] | None = None) -> None:
        """Broker loss or return: repair all partitions in one batch.  ``bounced`` brokers
        re-registered since the last look (a restart within the old session): as in
        Kafka, first handled as failed, so they lose their leaderships and ISR places
        (a restarted leader may have lost unflushed data its followers hold), then as
        started; they rejoin ISRs by fetching."""
        if not self.active:
            return
        started = time.monotonic()
        elected = 0
        if bounced:
            log.info("brokers %s re-registered (restarted): moving their leaderships",
                     sorted(bounced))
            returned, self.live = self.live, self.live - bounced
            try:
                elected = self.repair(None)
            finally:
                self.live = returned
        elected += self.repair(None)
        if elected:
            log.info("elected %d leaders in %.1f ms", elected,
                     (time.monotonic() - started) * 1000)
        self._initialize({name: {ASSIGNMENT} for name in self._cache.topics})

    def repair(self, keys: Iterable[PartitionKey] | None) -> int:
        """Apply :func:`election.elect_on_change` to ``keys`` (None: every partition);
        returns how many leaders changed.

        Two batches: first the partitions that get a new leader, then those that only
        drop followers from their ISR.  The brokers learn the changes as they are written
        (pushed, and read back through their watches), so writing the leader changes
        first lets clients switch over after a third of the writes (measured with 3,000
        partitions when brokers only re-read: a controlled shutdown handed over in about
        half the time).  Each batch is decided just before it is written: first the
        partitions whose leader may no longer lead (a cheap test), so the ISR-only
        decisions (two thirds of a failover's, 120-420 ms for all 30,006 at 30,000
        partitions) no longer delay the first leader write.  Each partition is decided
        once (nothing else changes the cache meanwhile: both passes run on this thread),
        and only conflicts are re-read and decided again."""
        eligible, alive = self.eligible, set(self.live)

        def decide(topic: TopicMetadata, partition: int,
                   state: PartitionState) -> PartitionState | None:
            unclean = topic.config.get("unclean.leader.election.enable", "").lower() == "true"
            return election.elect_on_change(
                topic.replicas[partition], state,
                self.eligible_for((topic.name, partition), eligible), alive, self.epoch,
                unclean)

        def leader_may_go(key: PartitionKey, state: PartitionState) -> bool:
            # elect_on_change keeps an eligible leader, unless its replica is offline
            # (a failed log dir): that rare move waits for the second batch.
            return state.leader not in eligible

        keys = None if keys is None else list(keys)
        started = time.monotonic()
        changes, previous = self._decide(keys, decide, leader_may_go)
        decided = time.monotonic()
        leader_moves = {key: new for key, new in changes.items() if new.leader != previous[key]}
        moved = self._write(leader_moves, previous, decide)
        if len(leader_moves) >= LOGGED_BATCH:
            log.info("decided %d leader changes in %.1f ms, wrote them in %.1f ms",
                     len(leader_moves), (decided - started) * 1000,
                     (time.monotonic() - decided) * 1000)
        rest, rest_previous = self._decide(
            keys, decide, lambda key, state: key not in changes and not leader_may_go(key, state))
        rest.update((key, new) for key, new in changes.items() if key not in leader_moves)
        previous.update(rest_previous)
        return moved + self._write(rest, previous, decide)

    # ---- controlled shutdown ----------------------------------------------------------

    def handle_shutdowns(self) -> None:
        """Move leadership and ISR membership off brokers in controlled shutdown, then
        tell each how many leaderships it still holds (those had no one to move to)."""
        if not self.active or not self.shutting_down:
            return
        started = time.monotonic()
        moved = self.repair(None)
        log.info("moved %d leaders off brokers %s in controlled shutdown in %.1f ms", moved,
                 sorted(self.shutting_down), (time.monotonic() - started) * 1000)
        remaining = Counter(state.leader for topic in self._cache.topics.values()
                            for state in topic.states.values()
                            if state.leader in self.shutting_down)
        for broker in sorted(self.shutting_down):
            try:
                self._client.set(znodes.controlled_shutdown_path(broker),
                                 znodes.encode_shutdown_result(remaining[broker]))
            except NoNodeError:
                pass  # the broker already gave up waiting and left

    # ---- preferred leaders ------------------------------------------------------------

    def elect_preferred(self, requests: list[PartitionRequest] | None) -> int:
        """Preferred-leader election for ``requests`` (None: every partition, the
        periodic rebalance); a request node is removed when done."""
        if not self.active:
            return 0
        eligible = self.eligible
        keys = None if requests is None else [(r.topic, r.partition) for r in requests]

        def decide(topic: TopicMetadata, partition: int,
                   state: PartitionState) -> PartitionState | None:
            return election.preferred_leader_move(
                topic.replicas[partition], state,
                self.eligible_for((topic.name, partition), eligible), self.epoch)
        moved = self._apply(keys, decide)
        if keys is not None:
            writes.remove_requests(self._client, znodes.PREFERRED_ELECTION, set(keys))
        if moved:
            log.info("moved %d leaders to their preferred replica", moved)
        return moved

    def elect_requested(self, unclean: bool, keys: list[PartitionKey] | None,
                        deadline_s: float) -> ElectionOutcomes | None:
        """An ElectLeaders request (None: every partition): each partition's outcome
        (None: no such partition) and the leader it should now have, once written.  None
        when this broker is not the active controller.  Decided once: writes a blip cuts
        short are repeated for up to ``deadline_s`` (a repeat finds its written states
        by their versions and decides nothing more for them), and the outcomes stay the
        first decision's, where deciding again would find its own elections done and
        answer "not needed"."""
        if not self.active:
            return None
        eligible, alive = self.eligible, set(self.live)
        topics = self._cache.topics
        if keys is None:
            keys = [(name, p) for name, topic in topics.items() for p in topic.replicas]

        def decide(topic: TopicMetadata, partition: int,
                   state: PartitionState) -> PartitionState | None:
            return election.requested_election(
                unclean, topic.replicas[partition], state,
                self.eligible_for((topic.name, partition), eligible), alive, self.epoch)[1]

        outcomes: ElectionOutcomes = {}
        changes: dict[PartitionKey, PartitionState] = {}
        previous: dict[PartitionKey, int] = {}
        for key in keys:
            name, partition = key
            topic = topics.get(name)
            state = topic.states.get(partition) if topic is not None else None
            if topic is None or state is None or partition not in topic.replicas:
                outcomes[key] = (None, -1)
                continue
            outcome, new = election.requested_election(
                unclean, topic.replicas[partition], state,
                self.eligible_for(key, eligible), alive, self.epoch)
            outcomes[key] = (outcome, state.leader if new is None else new.leader)
            if new is not None:
                changes[key], previous[key] = new, state.leader
        # Conflicts are decided again by ``decide``.
        through_blips(deadline_s)(self._write, changes, previous, decide)
        return outcomes

    # ---- reassignment -----------------------------------------------------------------

    def reassign(self, requests: list[PartitionRequest]) -> None:
        """Start requested reassignments: assignment := target + (original - target) with
        adding/removing set; brokers then start the new replicas following."""
        if not self.active or not requests:
            return
        by_topic: dict[str, dict[int, tuple[int, ...]]] = {}
        for request in requests:
            by_topic.setdefault(request.topic, {})[request.partition] = request.replicas
        finished: set[PartitionKey] = set()
        for name, targets in by_topic.items():
            finished |= self._start_reassignment(name, targets)
        if finished:
            writes.remove_requests(self._client, znodes.REASSIGN_PARTITIONS, finished)
        self._advance_reassignments(list(by_topic))

    def _start_reassignment(self, name: str, targets: dict[int, tuple[int, ...]]
                            ) -> set[PartitionKey]:
        """Returns requests that need no work (unknown partition, already assigned)."""
        for _ in range(MAX_ROUNDS):
            assignment = self._cache.assignment(name)
            if assignment is None:
                return {(name, p) for p in targets}
            done: set[PartitionKey] = set()
            moves: dict[int, election.Moved] = {}
            for partition, target in targets.items():
                in_progress = partition in assignment.adding or partition in assignment.removing
                if partition not in assignment.replicas or not target:
                    done.add((name, partition))
                elif not in_progress and assignment.replicas[partition] == target:
                    done.add((name, partition))
                elif not in_progress:
                    moves[partition] = election.reassignment_replicas(
                        assignment.replicas[partition], target)
                    if moves[partition][1:] == ((), ()):
                        done.add((name, partition))  # a reordering: done when written
            updated = assignment.moved(moves)
            if updated == assignment or self._write_assignment(name, updated):
                return done
            self._cache.read(name, {ASSIGNMENT})
        return set()

    def alter_reassignments(self, targets: dict[PartitionKey, tuple[int, ...] | None],
                            keep_replication_factor: bool, deadline_s: float
                            ) -> AlterOutcomes | None:
        """An AlterPartitionReassignments request (KIP-455): each partition's new target,
        which replaces a reassignment in progress, or None to cancel one; the outcome per
        partition (absent: the assignment kept changing under us).  None when this broker
        is not the active controller.  States are written before assignments, so ISR and
        leadership stay within what each partition keeps and no broker leads a replica it
        no longer hosts; requests of ``/admin/reassign_partitions`` for the same
        partitions are superseded.  As for :meth:`elect_requested`, each topic's outcomes
        are decided once and its writes repeated through a blip for up to ``deadline_s``
        (a repeated cancellation decided afresh would find nothing left to cancel)."""
        if not self.active:
            return None
        by_topic: dict[str, dict[int, tuple[int, ...] | None]] = {}
        for (name, partition), target in targets.items():
            by_topic.setdefault(name, {})[partition] = target
        outcomes: AlterOutcomes = {}
        for name, wanted in by_topic.items():
            altered = self._alter_topic(name, wanted, keep_replication_factor, deadline_s)
            outcomes.update({(name, p): outcome for p, outcome in altered.items()})
        return outcomes

    def _alter_topic(self, name: str, wanted: dict[int, tuple[int, ...] | None],
                     keep_replication_factor: bool, deadline_s: float) -> dict[int, Altering]:
        eligible = self.eligible
        for _ in range(MAX_ROUNDS):
            assignment, topic = self._cache.assignment(name), self._cache.topics.get(name)
            if assignment is None or topic is None:
                return dict.fromkeys(wanted, (election.Altered.NO_SUCH_PARTITION, None))
            decided = {p: self._alter_partition(
                (name, p), target, assignment, topic.states.get(p), eligible,
                keep_replication_factor) for p, target in wanted.items()}
            moves = {p: moved for p, (_, _, moved) in decided.items() if moved is not None}
            updated = assignment.moved(moves)
            if updated == assignment or through_blips(deadline_s)(
                    self._write_altered, name, updated, list(moves), eligible):
                return {p: (outcome, reason) for p, (outcome, reason, _) in decided.items()}
            self._cache.read(name, {ASSIGNMENT})
        return {}

    def _write_altered(self, name: str, updated: znodes.TopicAssignment, started: list[int],
                       eligible: set[int]) -> bool:
        """The states within the altered assignment, then the assignment itself (False on
        a conflicting assignment write)."""
        def decide(topic: TopicMetadata, partition: int,
                   state: PartitionState) -> PartitionState | None:
            return election.state_within(
                updated.replicas[partition], state,
                self.eligible_for((name, partition), eligible), self.epoch)[1]
        self._apply([(name, p) for p in started], decide)
        if not self._write_assignment(name, updated):
            return False
        writes.remove_requests(self._client, znodes.REASSIGN_PARTITIONS,
                               {(name, p) for p in started})
        self._advance_reassignments([name])
        return True

    def _alter_partition(self, key: PartitionKey, target: tuple[int, ...] | None,
                         assignment: znodes.TopicAssignment, state: PartitionState | None,
                         eligible: set[int], keep_replication_factor: bool
                         ) -> tuple[election.Altered, str | None, election.Moved | None]:
        """One partition's outcome, why its replica list was refused, and its move."""
        partition = key[1]
        if partition not in assignment.replicas:
            return election.Altered.NO_SUCH_PARTITION, None, None
        invalid = None if target is None else election.invalid_target(target, self.live)
        if invalid is not None:
            return election.Altered.INVALID_REPLICAS, invalid, None
        moved = election.altered_reassignment(
            assignment.replicas[partition], assignment.adding.get(partition, ()),
            assignment.removing.get(partition, ()), target)
        if moved is None:
            return election.Altered.NOTHING_TO_CANCEL, None, None
        union, added, _ = moved
        if (target is not None and keep_replication_factor
                and len(target) != len(union) - len(added)):  # the original's size
            return election.Altered.REPLICATION_FACTOR_CHANGED, None, None
        if state is not None and not election.state_within(
                union, state, self.eligible_for(key, eligible), self.epoch)[0]:
            return election.Altered.NO_LEADER_WITHIN, None, None
        return election.Altered.STARTED, None, moved

    def _reassigning(self, name: str) -> bool:
        topic = self._cache.topics.get(name)
        return topic is not None and bool(topic.adding_replicas or topic.removing_replicas)

    def _advance_reassignments(self, names: list[str]) -> None:
        """Finish reassignments whose whole target is in the ISR: move leadership into
        the target, shrink the ISR to it, then assignment := target."""
        finished: set[PartitionKey] = set()
        for name in names:
            finished |= self._finish_ready(name)
        if finished:
            writes.remove_requests(self._client, znodes.REASSIGN_PARTITIONS, finished)

    def _finish_ready(self, name: str) -> set[PartitionKey]:
        topic = self._cache.topics.get(name)
        if topic is None:
            return set()
        targets = {
            p: election.reassignment_target(topic.replicas[p], topic.removing_replicas.get(p, ()))
            for p in set(topic.adding_replicas) | set(topic.removing_replicas)
            if p in topic.replicas
        }
        ready = {p: t for p, t in targets.items()
                 if p in topic.states and election.reassignment_ready(t, topic.states[p])}
        if not ready:
            return set()
        eligible = self.eligible

        def decide(topic: TopicMetadata, partition: int,
                   state: PartitionState) -> PartitionState | None:
            return election.state_after_reassignment(ready[partition], state, eligible,
                                                     self.epoch)
        self._apply([(name, p) for p in ready], decide)
        for _ in range(MAX_ROUNDS):
            assignment = self._cache.assignment(name)
            current = self._cache.topics.get(name)
            if assignment is None or current is None:
                return set()
            done = {p for p, target in ready.items()
                    if p in current.states and current.states[p].leader in target}
            if not done:
                return set()
            updated = assignment.moved({p: (ready[p], (), ()) for p in done})
            if self._write_assignment(name, updated):
                log.info("reassignment of %s partitions %s done", name, sorted(done))
                return {(name, p) for p in done}
            self._cache.read(name, {ASSIGNMENT})
        return set()

    def _write_assignment(self, name: str, assignment: znodes.TopicAssignment) -> bool:
        version = writes.write_assignment_fenced(self._client, self._epoch_version, name,
                                                 assignment, self._cache.versions[name])
        if version is None:
            return False
        self._cache.put_assignment(name, assignment, version)
        return True

    # ---- shared -----------------------------------------------------------------------

    def _initialize(self, changed: dict[str, set[int]]) -> None:
        """First leadership of partitions without a state node (new topics/partitions):
        the first live replica leads, the live replicas are the ISR."""
        live = self.eligible | ({self._broker_id} - self.shutting_down)
        states: dict[PartitionKey, PartitionState] = {}
        for name, parts in changed.items():
            topic = self._cache.topics.get(name)
            if topic is None or len(topic.states) == len(topic.replicas):
                continue  # (the usual case: every partition has its state node)
            for partition in self._partitions(name, parts):
                if partition not in topic.states:
                    state = initial_state(topic.replicas[partition], live, self.epoch)
                    if state is not None:
                        states[(name, partition)] = state
        if states:
            writes.create_states(self._states_client(), states)

    def _apply(self, keys: Iterable[PartitionKey] | None, decide: Decide) -> int:
        """Decide and write ``keys`` (None: every partition) in one batch; re-read and
        re-decide conflicts.  Returns how many partitions changed leader."""
        changes, previous = self._decide(keys, decide)
        return self._write(changes, previous, decide)

    def _decide(self, keys: Iterable[PartitionKey] | None, decide: Decide,
                where: Callable[[PartitionKey, PartitionState], bool] | None = None
                ) -> tuple[dict[PartitionKey, PartitionState], dict[PartitionKey, int]]:
        """The new states ``decide`` gives ``keys`` (None: every partition, walked
        topic by topic without listing them) whose current state passes ``where`` (all
        when None), and the leaders they replace."""
        changes: dict[PartitionKey, PartitionState] = {}
        previous: dict[PartitionKey, int] = {}
        topics = self._cache.topics
        if keys is None:
            candidates: Iterable[tuple[TopicMetadata | None, str, int]] = (
                (topic, name, partition) for name, topic in topics.items()
                for partition in topic.states)
        else:
            candidates = ((topics.get(name), name, partition) for name, partition in keys)
        for topic, name, partition in candidates:
            state = topic.states.get(partition) if topic is not None else None
            if (topic is None or state is None or partition not in topic.replicas
                    or (where is not None and not where((name, partition), state))):
                continue
            new = decide(topic, partition, state)
            if new is not None:
                changes[(name, partition)] = new
                previous[(name, partition)] = state.leader
        return changes, previous

    def _write(self, changes: dict[PartitionKey, PartitionState],
               previous: dict[PartitionKey, int], decide: Decide) -> int:
        """Write ``changes`` in one pipelined batch; conflicts are re-read and decided
        again, for up to :data:`MAX_ROUNDS` batches.  Returns how many partitions
        changed leader (``previous``: the leaders before, extended for re-decisions)."""
        leaders_changed = 0
        for _ in range(MAX_ROUNDS):
            if not changes:
                break
            try:
                written, stale, rolled_back = writes.write_states_fenced(
                    self._states_client(), self._epoch_version, changes, self._written)
            except writes.ControllerFencedError:
                log.warning("broker %d is no longer the controller (epoch %d fenced)",
                            self._broker_id, self.epoch)
                self.active = False
                break
            leaders_changed += sum(state.leader != previous[key]
                                   for key, state in written.items())
            published: list[tuple[TopicMetadata, dict[int, PartitionState]]] = []
            for name in {name for name, _ in stale}:
                fresh = self._cache.read(name, {p for n, p in stale if n == name})
                if fresh is not None:  # hand the broker what others wrote, as its watch would
                    published.append((fresh, {}))
            if published:
                self._publish(self.epoch, published)
            if not stale and not rolled_back:
                break
            changes, redecided = self._decide(stale + rolled_back, decide)
            previous.update(redecided)
        return leaders_changed

    def _written(self, written: dict[PartitionKey, PartitionState]) -> None:
        """Part of a batch is written (see :func:`writes.write_states_fenced`): cache and
        publish it while the rest of the batch is still being answered."""
        by_topic: dict[str, dict[int, PartitionState]] = {}
        for (name, partition), state in written.items():
            by_topic.setdefault(name, {})[partition] = state
        published: list[tuple[TopicMetadata, dict[int, PartitionState]]] = []
        for name, states in by_topic.items():
            self._cache.put_states(name, states)
            metadata = self._cache.topics.get(name)
            if metadata is not None:  # (else deleted meanwhile)
                published.append((metadata, states))
        if published:
            self._publish(self.epoch, published)

    def _partitions(self, name: str, parts: set[int]) -> list[int]:
        """The partitions ``parts`` (topic cache keys) stands for: the assignment or the
        config changed means all of them (both can change who may lead)."""
        topic = self._cache.topics.get(name)
        if topic is None:
            return []
        if any(p < 0 for p in parts):
            return list(topic.replicas)
        return [p for p in parts if p in topic.replicas]
