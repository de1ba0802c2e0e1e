"""The broker's ZooKeeper session: registration, controller election, topic watches, writes.

Threading model (the reason this class looks the way it does): kazoo runs its own I/O and
callback threads, and the broker's asyncio loop must never wait on ZooKeeper.  So:

* every ZooKeeper operation runs on ONE private worker thread (``self._worker``); async
  methods submit there and await the result, watch callbacks re-submit there.  One thread
  means topic refreshes, controller work and writes are serialized without locks;
* results reach the asyncio side only through ``loop.call_soon_threadsafe`` into the
  :class:`CoordinationEvents` sink, so broker state is mutated on the loop thread only.

Watches are ZooKeeper's one-shot watches re-armed on every read, with one stable callable
per topic so kazoo does not pile up duplicates.  Failure handling: on SUSPENDED nothing is
done (the session may come back with its watches); on LOST the ephemeral registration and
all watches are gone, so once the client reconnects with a new session the broker
re-registers, re-elects and re-reads everything.

Controller: the first broker to create the ephemeral ``/controller`` node (bumping
``/controller_epoch``) is the controller.  For now its only duty is to give new partitions
their initial leadership (first live replica) and to execute ``/admin/delete_topics``
requests; leader failover is the replication issue's job.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

from brokerd.coordination import writes, znodes
from brokerd.coordination.assignment import initial_state
from brokerd.coordination.quota_watch import QuotaEvents, QuotaWatch
from brokerd.coordination.security_watch import SecurityEvents, SecurityWatch
from brokerd.coordination.znodes import (
    BrokerRegistration,
    PartitionState,
    TopicAssignment,
    TopicMetadata,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
# How long a request handler waits for a ZooKeeper operation before answering with a
# retriable error (the broker keeps serving data meanwhile).
OPERATION_TIMEOUT_S = 10.0


class CoordinationUnavailableError(Exception):
    """ZooKeeper could not complete an operation (connection loss, session expiry…).

    Raised instead of kazoo's own exceptions so that no package above this one needs to
    know kazoo; handlers map it to a retriable protocol error."""


class RegistrationError(RuntimeError):
    """Another live broker holds our broker id."""


class CoordinationEvents(Protocol):
    """The broker-side sink; every method is called on the asyncio loop thread."""

    def topic_changed(self, name: str, metadata: TopicMetadata | None) -> None: ...

    def brokers_changed(self, brokers: dict[int, BrokerRegistration]) -> None: ...

    def controller_changed(self, controller_id: int) -> None: ...


def split_connect(connect: str) -> tuple[str, str]:
    """``h1:2181,h2:2181/chroot`` -> (hosts, "/chroot") (chroot "" when absent)."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/")


class ZkCoordinator:
    """One broker's ZooKeeper session and everything it reads from or writes to it."""

    def __init__(
        self,
        connect: str,
        registration: BrokerRegistration,
        events: CoordinationEvents,
        loop: asyncio.AbstractEventLoop,
        session_timeout_s: float = 18.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._hosts, self._chroot = split_connect(connect)
        self._registration = registration
        self._events = events
        self._loop = loop
        self._clock = clock
        self._session_timeout_s = session_timeout_s
        self._client = KazooClient(hosts=self._hosts, timeout=session_timeout_s)
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="zk")
        self._topic_watchers: dict[str, Callable[[Any], None]] = {}
        self._live_brokers: set[int] = set()
        self._session_lost = False
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

    def _start_sync(self, timeout: float) -> None:
        self._client.start(timeout=timeout)
        if self._chroot:
            # kazoo does not create the chroot; Kafka does, so operators may omit it.
            self._client.ensure_path(self._chroot)
            self._client.chroot = self._chroot
        for path in (znodes.BROKER_IDS, znodes.TOPICS, znodes.TOPIC_CONFIGS,
                     znodes.DELETE_TOPICS):
            self._client.ensure_path(path)
        self.cluster_id = writes.read_or_create_cluster_id(self._client)
        self._register_sync()
        self._client.add_listener(self._on_state)
        ChildrenWatch(self._client, znodes.BROKER_IDS, self._on_broker_children)
        ChildrenWatch(self._client, znodes.TOPICS, self._on_topic_children)
        ChildrenWatch(self._client, znodes.DELETE_TOPICS, self._on_delete_requests)
        self._elect_sync()

    async def watch_security(self, events: SecurityEvents,
                             quota_events: QuotaEvents | None = None) -> None:
        """Start feeding ``events`` credentials, ACLs and tenant plans (see
        :mod:`brokerd.coordination.security_watch`) and ``quota_events`` client quotas (see
        :mod:`brokerd.coordination.quota_watch`, which shares the security watch's nodes);
        returns once the first reads are queued, so a following :meth:`barrier` waits for
        them."""
        quotas = (QuotaWatch(self._client, quota_events, self._post, self._submit)
                  if quota_events is not None else None)
        watch = SecurityWatch(self._client, events, self._post, self._submit, hook=quotas)

        def start() -> None:
            watch.start()
            if quotas is not None:
                quotas.start(watch)

        await self._run(start)

    async def barrier(self) -> None:
        """Return once every ZooKeeper task queued so far has run and posted its events
        (start-up uses it to serve only after the initial topic reads)."""
        await self._run(lambda: None)

    async def close(self) -> None:
        """Deregister (delete our ephemeral node) and end the session."""
        self._closing = True
        try:
            await self._run(self._close_sync)
        finally:
            self._worker.shutdown(wait=False)

    def _close_sync(self) -> None:
        try:
            self._client.delete(znodes.broker_path(self.broker_id))
        except Exception:  # noqa: BLE001 - closing the session removes it anyway
            log.debug("deregistration failed; session close removes the node", exc_info=True)
        self._client.stop()
        self._client.close()

    async def _run(self, fn: Callable[..., T], *args: Any,
                   timeout: float = OPERATION_TIMEOUT_S) -> T:
        """Run ``fn`` on the ZooKeeper thread; kazoo blocks while disconnected, so the
        caller gives up after ``timeout`` (the thread finishes the call on its own)."""
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(self._worker.submit(fn, *args)), timeout)
        except KazooException as exc:
            raise CoordinationUnavailableError(f"ZooKeeper: {exc!r}") from exc
        except TimeoutError:
            raise CoordinationUnavailableError(f"ZooKeeper: no answer in {timeout}s") from None

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
        try:
            fn(*args)
        except Exception:
            log.exception("ZooKeeper task %s failed", getattr(fn, "__name__", fn))

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._session_lost = True
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            self._submit(self._new_session_sync)

    def _new_session_sync(self) -> None:
        log.warning("ZooKeeper session was lost; re-registering broker %d", self.broker_id)
        self._register_sync()
        self._elect_sync()
        for name in self._client.get_children(znodes.TOPICS):
            self._refresh_topic_sync(name)

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
        now_ms = int(self._clock() * 1000)
        try:
            self._client.create(znodes.CONTROLLER,
                                znodes.encode_controller(self.broker_id, now_ms), ephemeral=True)
            self.controller_epoch = writes.bump_controller_epoch(self._client)
            self.controller_id = self.broker_id
            log.info("broker %d is the controller (epoch %d)", self.broker_id,
                     self.controller_epoch)
        except NodeExistsError:
            pass
        try:
            data, _ = self._client.get(znodes.CONTROLLER, watch=self._on_controller_event)
            self.controller_id = znodes.decode_controller(data)
        except NoNodeError:
            self._submit(self._elect_sync)  # vanished between create and get: try again
            return
        self._post(self._events.controller_changed, self.controller_id)
        if self.is_controller:
            for name in self._client.get_children(znodes.TOPICS):
                self._refresh_topic_sync(name)
            self._delete_requested_sync(self._client.get_children(znodes.DELETE_TOPICS))

    def _on_controller_event(self, event: Any) -> None:
        self._submit(self._elect_sync)

    # ---- brokers ---------------------------------------------------------------------

    def _on_broker_children(self, children: list[str]) -> None:
        self._submit(self._refresh_brokers_sync, children)

    def _refresh_brokers_sync(self, children: list[str]) -> None:
        brokers: dict[int, BrokerRegistration] = {}
        for child in children:
            try:
                data, _ = self._client.get(f"{znodes.BROKER_IDS}/{child}")
                brokers[int(child)] = BrokerRegistration.decode(int(child), data)
            except (NoNodeError, ValueError):
                continue
        came_alive = set(brokers) - self._live_brokers
        self._live_brokers = set(brokers)
        self._post(self._events.brokers_changed, brokers)
        if came_alive and self.is_controller:
            for name in list(self._topic_watchers):
                self._refresh_topic_sync(name)

    # ---- topics ----------------------------------------------------------------------

    def _on_topic_children(self, children: list[str]) -> None:
        for name in children:
            if name not in self._topic_watchers:
                self._submit(self._refresh_topic_sync, name)

    def _watcher(self, name: str) -> Callable[[Any], None]:
        watcher = self._topic_watchers.get(name)
        if watcher is None:
            def watcher(event: Any) -> None:
                self._submit(self._refresh_topic_sync, name)
            self._topic_watchers[name] = watcher
        return watcher

    def _get_watched(self, path: str, watcher: Callable[[Any], None]) -> tuple[bytes, Any]:
        """Read a node and watch it; a missing node gets an exists-watch for its creation."""
        try:
            return self._client.get(path, watch=watcher)  # type: ignore[no-any-return]
        except NoNodeError:
            if self._client.exists(path, watch=watcher) is not None:
                return self._client.get(path, watch=watcher)  # type: ignore[no-any-return]
            raise

    def _refresh_topic_sync(self, name: str) -> None:
        """Re-read one topic, give new partitions leaders (controller), tell the loop."""
        watcher = self._watcher(name)
        try:
            data, _ = self._client.get(znodes.topic_path(name), watch=watcher)
        except NoNodeError:
            self._topic_watchers.pop(name, None)
            self._post(self._events.topic_changed, name, None)
            return
        try:
            assignment = TopicAssignment.decode(name, data)
        except znodes.ZnodeFormatError:
            log.exception("ignoring topic %s with unreadable assignment", name)
            return
        states: dict[int, PartitionState] = {}
        for partition, replicas in assignment.replicas.items():
            path = znodes.partition_state_path(name, partition)
            try:
                raw, stat = self._get_watched(path, watcher)
                states[partition] = PartitionState.decode(raw, stat.version)
            except NoNodeError:
                state = self._initialize_partition(path, replicas, watcher)
                if state is not None:
                    states[partition] = state
            except znodes.ZnodeFormatError:
                log.exception("ignoring unreadable state of %s-%d", name, partition)
        try:
            raw_config, _ = self._get_watched(znodes.topic_config_path(name), watcher)
            config = znodes.decode_topic_config(raw_config)
        except NoNodeError:
            config = {}
        metadata = TopicMetadata(name, assignment.topic_id, assignment.replicas, states, config)
        self._post(self._events.topic_changed, name, metadata)

    def _initialize_partition(self, path: str, replicas: tuple[int, ...],
                              watcher: Callable[[Any], None]) -> PartitionState | None:
        """Controller only: write the first leadership of a partition that has none."""
        if not self.is_controller:
            return None
        state = initial_state(replicas, self._live_brokers | {self.broker_id},
                              self.controller_epoch)
        if state is None:
            return None
        try:
            self._client.create(path, state.encode(), makepath=True)
        except NodeExistsError:
            pass  # a previous controller got there first; the watch brings its version
        raw, stat = self._client.get(path, watch=watcher)
        return PartitionState.decode(raw, stat.version)

    def _on_delete_requests(self, children: list[str]) -> None:
        if children:
            self._submit(self._delete_requested_sync, children)

    def _delete_requested_sync(self, names: list[str]) -> None:
        if not self.is_controller:
            return
        for name in names:
            writes.delete_topic(self._client, name)
            self._client.delete(f"{znodes.DELETE_TOPICS}/{name}")

    # ---- writes (async API for request handlers; the ZooKeeper work is in ``writes``) ---

    async def create_topic(self, name: str, replicas: dict[int, tuple[int, ...]],
                           config: dict[str, str], topic_id: uuid.UUID) -> None:
        """Raises :class:`TopicExistsError` when ZooKeeper already has ``name``."""
        await self._run(writes.create_topic, self._client, name,
                        TopicAssignment(topic_id, replicas), config)

    async def delete_topic(self, name: str) -> None:
        await self._run(writes.delete_topic, self._client, name)

    async def set_partitions(self, name: str, replicas: dict[int, tuple[int, ...]]) -> None:
        """Add partitions to a topic's assignment (CreatePartitions), keeping its id.
        Raises :class:`TopicNotFoundError`."""
        await self._run(writes.add_partitions, self._client, name, replicas)

    async def set_topic_config(self, name: str, config: dict[str, str]) -> None:
        await self._run(writes.set_or_create, self._client, znodes.topic_config_path(name),
                        znodes.encode_topic_config(config))

    async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                         isr: tuple[int, ...], zk_version: int) -> PartitionState | None:
        """The leader's ISR store: write this broker as leader with ``isr`` iff the state's
        version is still ``zk_version``; the new state, or None when another write (the
        controller's, usually) got there first."""
        return await self._run(writes.update_isr, self._client,
                               znodes.partition_state_path(topic, partition),
                               self.broker_id, leader_epoch, isr, zk_version)

    async def allocate_producer_id_block(self) -> znodes.ProducerIdBlock:
        """Claim the next block of producer ids (a conditional update: unique cluster-wide)."""
        return await self._run(writes.claim_producer_id_block, self._client, self.broker_id)
