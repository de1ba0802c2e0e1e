"""Every topic as last read from ZooKeeper, kept current by watches, read partition by
partition, and only where a change was notified that nothing known covers.

Why a cache: a leader's ISR change or a controller's failover batch changes single
partition-state nodes; re-reading a 1,000-partition topic for each of them would cost a
million reads per failover.  So each watch event names what changed (its path: the
assignment, one partition's state, or the config), only that is re-read, and the broker is
handed the full, current :class:`TopicMetadata` built from this cache.  The controller
decides from the same cache and re-reads only what its conditional writes found stale.

Reads of many nodes are pipelined (kazoo's ``*_async``: all requests sent, then all
answers collected), so a whole topic costs about one round trip, not one per partition.

Partition states are watched by one persistent watch (:mod:`.state_watch`), so reading a
state arms nothing: a notified change is read only when the state held (read, pushed by
the controller, or written by this broker's controller) does not already cover it.  The
topic and config nodes keep one-shot watches, armed by every read with one stable
callable per topic that reports ``(topic, key)`` through ``on_change``, ``key`` being
:data:`ASSIGNMENT` or :data:`CONFIG` (the state watch reports partitions the same way).

Thread-safety: none; used only on the coordinator's ZooKeeper thread.  The
:class:`TopicMetadata` objects stored here are never mutated (each change stores a new
one), because they are handed to the event loop's thread.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from brokerd.coordination import znodes
from brokerd.coordination.state_feed import PushedTopic, newer_states
from brokerd.coordination.state_watch import StateWatch
from brokerd.coordination.znodes import PartitionState, TopicAssignment, TopicMetadata

log = logging.getLogger(__name__)

ASSIGNMENT = -1  # the topic node itself: replicas, adding/removing, or the topic is gone
CONFIG = -2  # the topic's config node
Watcher = Callable[[Any], None]
StateRequests = dict[int, Any]  # partition -> kazoo's pending get_async result


class TopicCache:
    """Topic metadata by name, plus each topic node's zk_version (the controller's
    reassignment writes are conditional on it)."""

    def __init__(self, client: KazooClient, on_change: Callable[[str, int], None],
                 state_watch: StateWatch) -> None:
        self._client = client
        self._on_change = on_change
        self._state_watch = state_watch
        self._watchers: dict[str, Watcher] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.versions: dict[str, int] = {}
        # Topic nodes holding no assignment at all: the residue of a deletion that raced
        # the controller's first leaders before 4edcd97 (its states' recursive create
        # brought the node back, empty).  Every broker ignores them; the controller
        # removes them (Controller.topics_read), which frees the name for CreateTopics.
        self.leftovers: set[str] = set()

    def known(self, name: str) -> bool:
        """Whether ``name`` is watched (read at least once and not deleted since)."""
        return name in self._watchers

    def forget_all(self) -> None:
        """After a session loss: watches are gone, so every topic must be read afresh."""
        self.topics.clear()
        self.versions.clear()
        self.leftovers.clear()

    def read(self, name: str, keys: set[int]) -> TopicMetadata | None:
        """Re-read what ``keys`` names and return the topic's new metadata, or None when
        the topic is gone.  A topic not cached yet is read whole.  When only partition
        states were named and each read back at the version cached (the controller's own
        writes, stored by :meth:`put_states`), the cached object itself is returned:
        callers can tell that nothing new arrived by identity."""
        current = self.topics.get(name)
        if current is None or ASSIGNMENT in keys:
            return self._read_topic(name, current, {k for k in keys if k >= 0})
        return self._merge(current, keys, self._read_states(name, _partitions(current, keys)))

    def read_changed(self, dirty: dict[str, set[int]]) -> dict[str, TopicMetadata | None]:
        """Re-read every dirty topic (its ``keys`` as for :meth:`read`) and return those
        that changed: new metadata, or None for a topic gone.  Left out: topics whose
        states read back at the cached versions, and partitions of topics no longer
        watched (deleted ones).

        Why all topics' state reads are sent before any answer is collected: a failover
        changes states in every topic, and waiting for one topic's answers before sending
        the next topic's requests cost one round trip per topic (30 at 30,000
        partitions), seconds on a loaded broker.  Whole-topic reads (assignment changes,
        topics not cached) are rare and stay one topic at a time.  Partitions whose
        notified changes the cached state covers are not read at all."""
        wanted = {name: keys for name, keys in dirty.items() if ASSIGNMENT in keys}
        wanted.update({name: unsettled for name, keys in dirty.items()
                       if ASSIGNMENT not in keys and self.known(name)
                       and (unsettled := self._unsettled(name, keys))})
        requests = {name: self._request_states(name, _partitions(self.topics[name], keys))
                    for name, keys in wanted.items()
                    if name in self.topics and ASSIGNMENT not in keys}
        changed: dict[str, TopicMetadata | None] = {}
        for name, keys in wanted.items():
            previous = self.topics.get(name)
            metadata: TopicMetadata | None
            if name in requests and previous is not None:
                metadata = self._merge(previous, keys,
                                       self._collect_states(name, requests[name]))
            else:
                metadata = self._read_topic(name, previous, {k for k in keys if k >= 0})
            if metadata is None or metadata is not previous:
                changed[name] = metadata
        return changed

    def put_states(self, name: str, states: dict[int, PartitionState]) -> None:
        """Record states this broker wrote itself (as controller or as leader), so its
        next decision starts from them and their notifications need no read.  A state
        already newer in the cache (pushed meanwhile) stays."""
        current = self.topics.get(name)
        if current is not None:
            self.offer_states(name, current.topic_id, states)

    def offer_states(self, name: str, topic_id: uuid.UUID,
                     states: dict[int, PartitionState]) -> None:
        """States the controller pushed (see :mod:`.state_feed`): kept where newer than
        the cached ones (by znode version), so their notifications need no read."""
        current = self.topics.get(name)
        if current is not None:
            newer = newer_states(current, topic_id, states)
            if newer:
                self._store(dataclasses.replace(current, states={**current.states, **newer}))

    def offer_pushed(self, topics: list[PushedTopic]) -> None:
        for topic in topics:
            self.offer_states(topic.name, topic.topic_id, topic.states)

    def put_assignment(self, name: str, assignment: TopicAssignment, zk_version: int) -> None:
        current = self.topics.get(name)
        if current is not None:
            self.versions[name] = zk_version
            self._store(dataclasses.replace(
                current, replicas=assignment.replicas, adding_replicas=assignment.adding,
                removing_replicas=assignment.removing))

    def assignment(self, name: str) -> TopicAssignment | None:
        current = self.topics.get(name)
        if current is None:
            return None
        return TopicAssignment(current.topic_id, current.replicas, current.adding_replicas,
                               current.removing_replicas)

    def _store(self, metadata: TopicMetadata) -> TopicMetadata:
        self.topics[metadata.name] = metadata
        return metadata

    def _read_topic(self, name: str, current: TopicMetadata | None,
                    changed: set[int] | None = None) -> TopicMetadata | None:
        """Assignment and config, plus the states of partitions not cached yet and of
        those in ``changed`` (notified changes that nothing cached covers)."""
        watcher = self._watcher(name)
        try:
            data, stat = self._client.get(znodes.topic_path(name), watch=watcher)
        except NoNodeError:
            self._watchers.pop(name, None)
            self.topics.pop(name, None)
            self.versions.pop(name, None)
            self.leftovers.discard(name)
            self._state_watch.forget(name)
            return None
        if not data:
            log.warning("ignoring topic node %s: it holds no assignment", name)
            self.leftovers.add(name)
            return current
        self.leftovers.discard(name)
        try:
            assignment = TopicAssignment.decode(name, data)
        except znodes.ZnodeFormatError:
            log.exception("ignoring topic %s with unreadable assignment", name)
            return current
        known: dict[int, PartitionState] = {}
        if current is not None and current.topic_id == assignment.topic_id:
            known = current.states  # (a topic re-created under its old name starts afresh)
        changed = changed or set()
        states = {p: s for p, s in known.items() if p in assignment.replicas and p not in changed}
        states.update(self._read_states(
            name, [p for p in assignment.replicas if p not in states]))
        self.versions[name] = stat.version
        return self._store(TopicMetadata(
            name, assignment.topic_id, assignment.replicas, states, self._read_config(name),
            assignment.adding, assignment.removing))

    def _read_config(self, name: str) -> dict[str, str]:
        path = znodes.topic_config_path(name)
        watcher = self._watcher(name)
        try:
            raw, _ = self._client.get(path, watch=watcher)
        except NoNodeError:
            if self._client.exists(path, watch=watcher) is None:
                return {}
            raw, _ = self._client.get(path, watch=watcher)
        return znodes.decode_topic_config(raw)

    def _merge(self, current: TopicMetadata, keys: set[int],
               read: dict[int, PartitionState]) -> TopicMetadata:
        """``current`` with the states just read that are newer than the cached ones (and
        the config, when named), or ``current`` itself when none is.  A state never goes
        back: in an ensemble this session's server may answer with an older state than the
        one the controller just wrote through its write session (:mod:`.write_session`)
        or that was pushed to this broker."""
        newer = newer_states(current, current.topic_id, read)
        if CONFIG not in keys and not newer:
            return current
        config = self._read_config(current.name) if CONFIG in keys else current.config
        return self._store(dataclasses.replace(current, states={**current.states, **newer},
                                               config=config))

    def _read_states(self, name: str, partitions: Iterable[int]) -> dict[int, PartitionState]:
        return self._collect_states(name, self._request_states(name, partitions))

    def _unsettled(self, name: str, keys: set[int]) -> set[int]:
        """``keys`` less the partitions whose cached state covers every change notified
        since their last read (the controller pushed it, or wrote it here).  All of them
        for a topic not cached (read whole)."""
        current = self.topics.get(name)
        if current is None:
            return keys
        states = current.states
        unsettled = set()
        for key in keys:
            state = states.get(key)
            if (key < 0 or state is None
                    or not self._state_watch.covered(name, key, state.zk_version)):
                unsettled.add(key)
        return unsettled

    def _request_states(self, name: str, partitions: Iterable[int]) -> StateRequests:
        """Send the reads without waiting for any answer."""
        return {p: self._state_watch.read_async(name, p) for p in partitions}

    def _collect_states(self, name: str, requests: StateRequests) -> dict[int, PartitionState]:
        """Wait for the answers.  A missing state node is left out: its creation is
        notified (and then read)."""
        states: dict[int, PartitionState] = {}
        for partition, result in requests.items():
            try:
                raw, stat = result.get()
                states[partition] = PartitionState.decode(raw, stat.version)
            except NoNodeError:
                pass
            except znodes.ZnodeFormatError:
                log.exception("ignoring unreadable state of %s-%d", name, partition)
        return states

    def _watcher(self, name: str) -> Watcher:
        watcher = self._watchers.get(name)
        if watcher is None:
            config_path = znodes.topic_config_path(name)

            def watcher(event: Any) -> None:
                if event.path is None:
                    return  # kazoo's reset on a lost connection: re-read on its return
                self._on_change(name, CONFIG if event.path == config_path else ASSIGNMENT)
            self._watchers[name] = watcher
        return watcher


def _partitions(current: TopicMetadata, keys: set[int]) -> list[int]:
    """The partitions ``keys`` names that the topic's assignment still has."""
    return [k for k in keys if k >= 0 and k in current.replicas]
