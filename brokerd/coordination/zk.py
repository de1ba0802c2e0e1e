"""The broker's ZooKeeper session: registration, controller election, topic watches, writes
(the request handlers' write API is :mod:`brokerd.coordination.client_writes`).

Threading model (the reason this class looks the way it does): kazoo runs its own I/O and
callback threads, and the broker's asyncio loop must never wait on ZooKeeper.  So:

* every ZooKeeper operation runs on ONE private worker thread (``self._worker``); async
  methods submit there and await the result, watch callbacks re-submit there.  One thread
  means topic refreshes, controller work and writes are serialized without locks;
* results reach the asyncio side only through ``loop.call_soon_threadsafe`` into the
  :class:`CoordinationEvents` sink, so broker state is mutated on the loop thread only.

Watches are ZooKeeper's one-shot watches re-armed on every read, with one stable callable
per topic so kazoo does not pile up duplicates, except for partition states: one
persistent watch covers them all (:mod:`brokerd.coordination.state_watch`), so a state
change pushed by the controller, or written by this broker, is not read back.

Failure handling: back from SUSPENDED, one-shot watches are re-armed by re-reading; after
LOST, the broker re-registers, re-elects and re-reads everything in its new session; steps
of start-up and re-registration repeat across a blip; a task a blip cuts short is a warning.

Topics are cached (:mod:`brokerd.coordination.topic_cache`): a watch event re-reads only
the node it names, and events are coalesced (:mod:`brokerd.coordination.dirty_topics`):
they mark (topic, partition) dirty and one flush task re-reads everything dirty and posts
at most one ``topic_changed`` per topic, so a burst of 1,000 state changes costs at most
1,000 pipelined reads and one post per topic.

Controller: the first broker to create the ephemeral ``/controller`` node (bumping
``/controller_epoch``) is the controller; its duties (failover, controlled shutdown,
preferred leaders, reassignment, first leaders of new partitions) are in
:mod:`brokerd.coordination.controller`.  It also executes ``/admin/delete_topics``.
Every broker keeps the controller's inputs current (live brokers, brokers shutting down,
the topic cache), so whoever wins the next election can act at once.  The admin-request
and dynamic broker config watches are in :mod:`brokerd.coordination.admin_watch`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from kazoo.client import KazooState
from kazoo.exceptions import ConnectionLoss, NodeExistsError, NoNodeError, SessionExpiredError
from kazoo.recipe.watchers import ChildrenWatch

from brokerd.coordination import state_feed, writes, znodes
from brokerd.coordination.admin_watch import BrokerConfigWatch, watch_admin_requests
from brokerd.coordination.broker_watch import LiveBroker, bounced, read_live_brokers
from brokerd.coordination.client_writes import ClientWrites
from brokerd.coordination.controller import Controller
from brokerd.coordination.dirty_topics import DirtyTopics
from brokerd.coordination.isr_writes import IsrRequest, IsrWriter
from brokerd.coordination.quota_watch import QuotaEvents, QuotaWatch
from brokerd.coordination.reconnect import new_client, split_connect, through_blips, until_reconnected
from brokerd.coordination.security_watch import SecurityEvents, SecurityWatch
from brokerd.coordination.state_watch import StateWatch
from brokerd.coordination.topic_cache import ASSIGNMENT, TopicCache
from brokerd.coordination.write_session import WriteSession
from brokerd.coordination.zk_await import (
    OPERATION_TIMEOUT_S,
    CoordinationUnavailableError,
    await_zk_work,
)
from brokerd.coordination.znodes import (
    BrokerRegistration,
    PartitionState,
    TopicMetadata,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
# Start-up calls after start() queue behind the initial read of every topic on the one
# ZooKeeper thread (30,000 partition states took over 10 s on a loaded 2-core machine), so
# they wait this long: ZooKeeper itself already answered start().
STARTUP_QUEUE_TIMEOUT_S = 120.0
# Reads that must not queue behind the ZooKeeper thread's work (kazoo's client is
# thread-safe): a leaving broker's poll for its controlled-shutdown result.  Its thread
# starts at the first use.
_BESIDE_THE_QUEUE = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zk-beside")


class RegistrationError(RuntimeError):
    """Another live broker holds our broker id."""


class CoordinationEvents(Protocol):
    """The broker-side sink; every method is called on the asyncio loop thread."""

    def topic_changed(self, name: str, metadata: TopicMetadata | None) -> None: ...

    def brokers_changed(self, brokers: dict[int, BrokerRegistration]) -> None: ...

    def controller_changed(self, controller_id: int) -> None: ...

    def broker_config_changed(self, default: dict[str, str], own: dict[str, str]) -> None:
        """Dynamic broker config: ``/config/brokers/<default>`` and
        ``/config/brokers/<this id>``; posted once at start and on every change."""


class ZkCoordinator(ClientWrites):
    """One broker's ZooKeeper session and everything it reads from or writes to it."""

    def __init__(
        self,
        connect: str,
        registration: BrokerRegistration,
        events: CoordinationEvents,
        loop: asyncio.AbstractEventLoop,
        session_timeout_s: float = 18.0,
        clock: Callable[[], float] = time.time,
        leader_rebalance_interval_s: float | None = None,
    ) -> None:
        """``leader_rebalance_interval_s``: how often the controller moves leadership back
        to preferred replicas (``auto.leader.rebalance.enable`` /
        ``leader.imbalance.check.interval.seconds``); None disables it."""
        self._hosts, self._chroot = split_connect(connect)
        self._registration = registration
        self._events = events
        self._loop = loop
        self._clock = clock
        self._session_timeout_s = session_timeout_s
        self._client = new_client(self._hosts, session_timeout_s)
        self._write_session = WriteSession(self._hosts, self._chroot, session_timeout_s)
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zk")
        # Watch events (kazoo threads) coalesced into flushes (worker thread).
        self._dirty = DirtyTopics(lambda: self._submit(self._flush_sync), self._pushed_here)
        self._state_watch = StateWatch(self._client, self._dirty.state_changed)
        self._topics = TopicCache(self._client, self._dirty.mark, self._state_watch)
        self._isr_writes = IsrWriter(self._client, self._topics, self._submit,
                                     self._isr_written)
        self.states = state_feed.StateFeed(  # topics reach the broker through this, pushes merged in
            events.topic_changed, lambda topics: self._submit(self._topics.offer_pushed, topics))
        self._live_brokers: dict[int, LiveBroker] = {}  # the last snapshot (worker thread)
        self._controller = Controller(
            self._client, self._topics, registration.broker_id,
            lambda epoch, written: self._post(self.states.written, epoch, written),
            self._write_session.client)
        self._broker_configs = BrokerConfigWatch(self._client, registration.broker_id,
                                                 events.broker_config_changed, self._post,
                                                 self._submit)
        self._rebalance_interval_s = leader_rebalance_interval_s
        self._rebalancer: asyncio.Task[None] | None = None
        self._session_lost = False
        self._suspended = False  # connection lost, session (maybe) alive: re-arm on return
        self._leaving = False
        self._closing = False
        self.controller_id = -1
        self.cluster_id = ""
        self.controller_epoch = 0

    @property
    def broker_id(self) -> int:
        return self._registration.broker_id

    @property
    def is_controller(self) -> bool:
        return self.controller_id == self.broker_id

    # ---- lifecycle -------------------------------------------------------------------

    async def start(self, timeout: float = 15.0) -> None:
        """Connect, create the base paths, register, elect, and start all watches."""
        # connecting, plus waiting out a foreign registration of our id (see _register_sync)
        budget = timeout + self._session_timeout_s + 5
        await self._run(self._start_sync, timeout, timeout=budget)
        if self._rebalance_interval_s is not None:
            self._rebalancer = asyncio.create_task(self._rebalance_periodically(
                self._rebalance_interval_s))

    def _start_sync(self, timeout: float) -> None:
        """Steps repeat across a blip (:func:`until_reconnected`); the listener is first."""
        self._client.start(timeout=timeout)
        self._client.add_listener(self._on_state)
        retried = until_reconnected()
        if self._chroot:
            # kazoo does not create the chroot; Kafka does, so operators may omit it.
            retried(self._client.ensure_path, self._chroot)
            self._client.chroot = self._chroot
        for path in (znodes.BROKER_IDS, znodes.TOPICS, znodes.TOPIC_CONFIGS,
                     znodes.DELETE_TOPICS, znodes.CONTROLLED_SHUTDOWN,
                     znodes.LOG_DIR_EVENT_NOTIFICATION):
            retried(self._client.ensure_path, path)
        self.cluster_id = retried(writes.read_or_create_cluster_id, self._client)
        retried(self._register_sync)
        retried(self._refresh_brokers_sync)  # arms the /brokers/ids watch
        retried(self._watch_topics_sync, False)  # with the state watch, before any read
        ChildrenWatch(self._client, znodes.DELETE_TOPICS, self._on_delete_requests)
        ChildrenWatch(self._client, znodes.CONTROLLED_SHUTDOWN, self._on_shutdown_requests)
        ChildrenWatch(self._client, znodes.LOG_DIR_EVENT_NOTIFICATION, self._on_log_dir_events)
        watch_admin_requests(self._client, self._submit, self._controller.reassign,
                             self._controller.elect_preferred)
        self._broker_configs.start()
        retried(self._elect_sync)

    async def watch_security(self, events: SecurityEvents,
                             quota_events: QuotaEvents | None = None) -> None:
        """Feed ``events`` credentials, ACLs and tenant plans (:mod:`.security_watch`) and
        ``quota_events`` client quotas (:mod:`.quota_watch`); returns once the first reads
        are queued, so a following :meth:`barrier` waits for them."""
        quotas = (QuotaWatch(self._client, quota_events, self._post, self._submit)
                  if quota_events is not None else None)
        watch = SecurityWatch(self._client, events, self._post, self._submit, hook=quotas)

        def start() -> None:
            watch.start()
            if quotas is not None:
                quotas.start(watch)

        await self._run(start, timeout=STARTUP_QUEUE_TIMEOUT_S)

    async def watch_revoked_certificates(self, revoked: Callable[[list[str]], None]) -> None:
        """Post ``/client-certs/revoked``'s children (serials) to ``revoked``, now and on change."""
        def start() -> None:
            until_reconnected()(self._client.ensure_path, znodes.REVOKED_CLIENT_CERTS)
            ChildrenWatch(self._client, znodes.REVOKED_CLIENT_CERTS,
                          lambda children: self._post(revoked, list(children)))

        await self._run(start, timeout=STARTUP_QUEUE_TIMEOUT_S)

    async def barrier(self) -> None:
        """Return once every ZooKeeper task queued so far has run and posted its events
        (start-up uses it to serve only after the initial topic reads)."""
        await self._run(lambda: None, timeout=STARTUP_QUEUE_TIMEOUT_S)

    async def close(self) -> None:
        """Deregister (delete our ephemeral node) and end the session."""
        self._closing = True
        if self._rebalancer is not None:
            self._rebalancer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._rebalancer
        try:
            await self._run(self._close_sync)
        finally:
            self._worker.shutdown(wait=False)

    def _close_sync(self) -> None:
        self._isr_writes.drain()  # requests queued after the last scheduled drain
        try:
            self._client.delete(znodes.broker_path(self.broker_id))
        except Exception:  # noqa: BLE001 - closing the session removes it anyway
            log.debug("deregistration failed; session close removes the node", exc_info=True)
        self._write_session.close()
        self._client.stop()
        self._client.close()

    async def _run(self, fn: Callable[..., T], *args: Any, timeout: float = OPERATION_TIMEOUT_S,
                   repeated: bool = False) -> T:
        """Run ``fn`` on the ZooKeeper thread; kazoo blocks while disconnected, so the
        caller gives up after ``timeout`` (the thread finishes the call on its own).
        ``repeated``: a write made for a client, run again across a blip for as long as
        the caller waits (:func:`through_blips`; ``fn`` must be safe to repeat)."""
        if repeated:
            fn, args = through_blips(timeout), (fn, *args)
        return await await_zk_work(self._worker.submit(fn, *args), timeout)

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        """Hand a result to the loop thread (dropped once the loop is gone)."""
        if self._closing:
            return
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            log.debug("event loop closed; dropping %s", getattr(fn, "__name__", fn))

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._closing:
            return
        try:
            self._worker.submit(self._logged, fn, *args)
        except RuntimeError:
            pass  # worker shut down during close

    @staticmethod
    def _logged(fn: Callable[..., Any], *args: Any) -> None:
        try:  # a lost connection or session: the reconnection redoes what it needs
            fn(*args)
        except (ConnectionLoss, SessionExpiredError) as exc:
            log.warning("ZooKeeper task %s cut short: %r", getattr(fn, "__name__", fn), exc)
        except Exception:
            log.exception("ZooKeeper task %s failed", getattr(fn, "__name__", fn))

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._session_lost = True
        elif state == KazooState.SUSPENDED:
            self._suspended = True
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = self._suspended = False
            self._submit(self._new_session_sync)
        elif state == KazooState.CONNECTED and self._suspended:
            self._suspended = False
            self._submit(self._rewatch_sync)

    def _rewatch_sync(self) -> None:
        """The connection came back within the session.  kazoo dropped every one-shot watch
        (firing each once with a NONE event), so every topic is read afresh, re-arming its
        watch, and ``/controller``'s by running again; changes made meanwhile arrive with
        the reads.  (kazoo's recipes re-arm their own watches.)"""
        log.warning("ZooKeeper connection is back: re-reading topics to re-arm their watches")
        self._topics.forget_all()
        self._watch_topics_sync(read_all=True)
        self._submit(self._elect_sync)  # re-arms the /controller watch (its event was lost)
        self._submit(self._refresh_brokers_sync)  # and the /brokers/ids one

    def _new_session_sync(self) -> None:
        """Registration, watches and the controller role went with the old session: made
        again, steps repeated across a blip; winning the role again bumps the epoch."""
        log.warning("ZooKeeper session was lost; re-registering broker %d", self.broker_id)
        retried = until_reconnected()
        retried(self._register_sync)
        self._topics.forget_all()
        self._controller.active = False
        retried(self._elect_sync)
        retried(self._refresh_brokers_sync)
        retried(self._watch_topics_sync, True)

    # ---- registration and controller -------------------------------------------------

    def _register_sync(self) -> None:
        path = znodes.broker_path(self.broker_id)
        data = self._registration.encode(int(self._clock() * 1000))
        deadline = time.monotonic() + self._session_timeout_s + 2
        while True:
            try:
                self._client.create(path, data, ephemeral=True)
                return
            except NodeExistsError:
                pass
            try:
                old, stat = self._client.get(path)
            except NoNodeError:
                continue
            if stat.ephemeralOwner == self._client.client_id[0]:
                return
            stale = BrokerRegistration.decode(self.broker_id, old)
            if stale.endpoints == self._registration.endpoints:
                # We already bound these listener ports, so the holder cannot be alive on
                # them: it is our own crashed predecessor whose session has not expired yet.
                log.info("removing stale registration of broker %d", self.broker_id)
                self._client.delete(path, version=stat.version)
                continue
            if time.monotonic() > deadline:
                raise RegistrationError(f"broker id {self.broker_id} is registered by {old!r}")
            time.sleep(0.2)

    def _elect_sync(self) -> None:
        """Run for controller (unless leaving), then watch ``/controller``.  Winning is read
        from the node's owner (Kafka's checked ephemeral create: a blip can take the create's
        answer after it took effect); the winner fences its predecessor by bumping the epoch."""
        if not self._leaving:
            with contextlib.suppress(NodeExistsError):
                self._client.create(znodes.CONTROLLER, znodes.encode_controller(
                    self.broker_id, int(self._clock() * 1000)), ephemeral=True)
        try:
            data, stat = self._client.get(znodes.CONTROLLER, watch=self._on_controller_event)
        except NoNodeError:
            self._submit(self._elect_sync)  # vanished between create and get: try again
            return
        self.controller_id = znodes.decode_controller(data)
        ours = stat.ephemeralOwner == self._client.client_id[0]
        if ours and not self._controller.active and not self._leaving:
            self.controller_epoch, epoch_version = writes.bump_controller_epoch(self._client)
            self._controller.activate(self.controller_epoch, epoch_version)
            log.info("broker %d is the controller (epoch %d)", self.broker_id,
                     self.controller_epoch)
        self._controller.active = self._controller.active and self.is_controller
        self._post(self._events.controller_changed, self.controller_id)
        if self._controller.active:
            self._controller.resume()
            self._delete_requested_sync(self._client.get_children(znodes.DELETE_TOPICS))

    def _on_controller_event(self, event: Any) -> None:
        self._submit(self._elect_sync)

    async def _rebalance_periodically(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            self._submit(self._controller.elect_preferred, None)

    # ---- brokers ---------------------------------------------------------------------

    def _on_broker_event(self, event: Any) -> None:
        self._submit(self._refresh_brokers_sync)

    def _refresh_brokers_sync(self) -> None:
        """Read every registration (see :mod:`.broker_watch`: no change goes unseen) and
        re-arm the one-shot watch on ``/brokers/ids``."""
        live = read_live_brokers(self._client, watch=self._on_broker_event)
        restarted = bounced(self._live_brokers, live)
        self._live_brokers = live
        brokers = {broker: entry.registration for broker, entry in live.items()}
        self._controller.live = set(brokers)
        self._controller.offline = {broker: set(registration.offline_replicas)
                                    for broker, registration in brokers.items()
                                    if registration.offline_replicas}
        self._post(self._events.brokers_changed, brokers)
        self._controller.brokers_changed(restarted)

    def _on_log_dir_events(self, children: list[str]) -> None:
        if children:
            self._submit(self._log_dir_events_sync, children)

    def _log_dir_events_sync(self, children: list[str]) -> None:
        """A broker's log dir failed: the controller re-reads every registration (the
        broker listed its offline replicas in its own) and repairs, then deletes the
        notifications, as Kafka's controller does."""
        if not self._controller.active:
            return
        self._refresh_brokers_sync()
        for child in children:
            with contextlib.suppress(NoNodeError):
                self._client.delete(f"{znodes.LOG_DIR_EVENT_NOTIFICATION}/{child}")

    async def report_offline_replicas(self, keys: list[tuple[str, int]]) -> None:
        """This broker's log dir failed and ``keys`` were in it: list them in the
        registration and notify the controller, which moves their leadership and ISR
        membership to the other replicas."""
        offline = tuple(sorted({*self._registration.offline_replicas, *keys}))
        self._registration = dataclasses.replace(self._registration, offline_replicas=offline)

        def report() -> None:
            self._client.set(znodes.broker_path(self.broker_id),
                             self._registration.encode(int(self._clock() * 1000)))
            self._client.create(
                f"{znodes.LOG_DIR_EVENT_NOTIFICATION}/{znodes.LOG_DIR_EVENT_PREFIX}",
                znodes.encode_log_dir_event(self.broker_id), sequence=True)
        await self._run(report)

    def _on_shutdown_requests(self, children: list[str]) -> None:
        self._submit(self._shutdown_requests_sync, children)

    def _shutdown_requests_sync(self, children: list[str]) -> None:
        self._controller.shutting_down = {int(c) for c in children if c.isdigit()}
        self._controller.handle_shutdowns()

    # ---- topics ----------------------------------------------------------------------

    def _watch_topics_sync(self, read_all: bool) -> None:
        """Arm the partition-state watch and then the one-shot watch on the topic list,
        and mark the topics to read: all of them (after a connection or session loss, when
        watches and their events were lost), or those not known yet.

        Why this order, and why not kazoo's ChildrenWatch (which re-arms itself when the
        connection returns): ZooKeeper 3.8.0 keeps one watch mode per path and session, so a
        recursive watch added on ``/brokers/topics`` after a children watch there silently
        replaces it, and new topics went unnoticed after a reconnection
        (ZOOKEEPER-4466; the children watch armed after the recursive one works)."""
        self._state_watch.add()
        self._read_topic_list_sync(read_all)

    def _on_topics_event(self, event: Any) -> None:
        """kazoo's thread: the topic list changed (a None path is kazoo's reset on a lost
        connection: the reconnection re-arms).  The re-arming read runs on the ZooKeeper
        thread, without adding the state watch again."""
        if event.path is not None:
            self._submit(self._read_topic_list_sync)

    def _read_topic_list_sync(self, read_all: bool = False) -> None:
        for name in self._client.get_children(znodes.TOPICS, watch=self._on_topics_event):
            if read_all or not self._topics.known(name):
                self._dirty.mark(name, ASSIGNMENT)

    def _pushed_here(self, topic: str, partition: int) -> bool:
        """kazoo's thread: whether the controller pushes this partition's changes here (a
        replica hosted here, another broker controlling).  Reads the topic cache across
        threads: one dict lookup is atomic, and the metadata stored is never mutated."""
        metadata = self._topics.topics.get(topic)
        return (not self.is_controller and metadata is not None
                and self.broker_id in metadata.replicas.get(partition, ()))

    def _isr_written(self, changed: dict[str, set[int]]) -> None:
        """This broker's own ISR writes, in the cache but never read back: hand the topics
        to the broker and let the controller act on them, as a flush would."""
        for name in changed:
            metadata = self._topics.topics.get(name)
            if metadata is not None:
                self._post(self.states.read, name, metadata)
        self._controller.topics_read(changed)

    def _flush_sync(self) -> None:
        """Re-read everything marked dirty (pipelined across topics), hand each changed
        topic to :attr:`states` (the broker), then let the controller act on what it read."""
        dirty = self._dirty.take()
        changed: dict[str, set[int]] = {}
        for name, metadata in self._topics.read_changed(dirty).items():
            self._post(self.states.read, name, metadata)
            if metadata is not None:
                changed[name] = dirty[name]
        self._controller.topics_read(changed)

    def _on_delete_requests(self, children: list[str]) -> None:
        if children:
            self._submit(self._delete_requested_sync, children)

    def _delete_requested_sync(self, names: list[str]) -> None:
        if not self.is_controller:
            return
        for name in names:
            writes.delete_topic(self._client, name)
            self._client.delete(f"{znodes.DELETE_TOPICS}/{name}")

    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask the controller to move this broker's leaderships to other in-sync replicas
        and drop it from every ISR; True once it reports nothing left to move (False on
        timeout, or when some partition had no one to take over).  A controller does the
        moves itself and then resigns.  A blip delays it rather than failing it (the
        request is repeated and the answer asked for again), as Kafka retries a controlled
        shutdown; a session expiry fails it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        self._leaving = True
        try:
            await self._run(writes.request_controlled_shutdown, self._client, self.broker_id,
                            timeout=timeout_s, repeated=True)
            # Polled beside the ZooKeeper thread, which re-reads every partition state moved
            # (10,000 for a broker that led 10,000): a poll queued behind them was 14-16 s late.
            while loop.time() < deadline:
                try:
                    remaining = await await_zk_work(_BESIDE_THE_QUEUE.submit(
                        writes.controlled_shutdown_result, self._client, self.broker_id),
                        max(0.1, deadline - loop.time()))
                except CoordinationUnavailableError:
                    remaining = None  # a blip: asked again once reconnected
                if remaining is not None:
                    if self.is_controller:  # (others would queue for nothing to do)
                        await self._run(self._resign_sync,
                                        timeout=max(0.1, deadline - loop.time()))
                    return remaining == 0
                await asyncio.sleep(0.05)
        except CoordinationUnavailableError:
            log.warning("controlled shutdown of broker %d failed", self.broker_id,
                        exc_info=True)
        return False

    def _resign_sync(self) -> None:
        """Hand the controller role on (a leaving broker does not run again)."""
        if not self.is_controller:
            return
        self._controller.active = False
        with contextlib.suppress(NoNodeError):
            self._client.delete(znodes.CONTROLLER)

    async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                         isr: tuple[int, ...], zk_version: int) -> PartitionState | None:
        """The leader's ISR store: write this broker as leader with ``isr`` iff the state's
        version is still ``zk_version``; the new state, or None when another write (the
        controller's, usually) got there first.  Concurrent calls are batched (see
        :mod:`brokerd.coordination.isr_writes`)."""
        if self._closing:
            raise CoordinationUnavailableError("ZooKeeper session is closing")
        request = IsrRequest(topic, partition, self.broker_id, leader_epoch, isr, zk_version)
        self._isr_writes.submit(request)
        return await await_zk_work(request.result, OPERATION_TIMEOUT_S)
