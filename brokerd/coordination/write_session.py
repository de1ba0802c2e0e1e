"""A second ZooKeeper session for the controller's batched partition-state writes.

Why not the broker's own session: every broker, the controller included, watches every
partition-state node it caches, and ZooKeeper sends a watch notification ahead of each
write's answer on the session that holds the watch.  Written through the watching session,
a failover's 10,000 pipelined state writes came back behind 10,000 notifications, read one
at a time by kazoo's connection thread, which waits for the GIL behind the busy event loop
at every socket read.  Measured against a private ZooKeeper (10,000 states, transactions
of 100, all sent before any answer, a second thread spinning like a busy event loop):
5.5 s through the watching session, 0.36 s through a session with no watches (0.9 s and
0.31 s with the other thread idle).  In the 30,000-partition failover the controller's
leader batch took 3.2-5.3 s through its own session.

Consistency: the session holds no watches and no ephemeral nodes, so losing it loses
nothing; kazoo reconnects it.  Its writes stay fenced by the controller-epoch check in
each transaction (:func:`brokerd.coordination.writes.write_states_fenced`), so a deposed
controller's write session cannot overwrite its successor's decisions.  In an ensemble
the two sessions may be connected to different servers, so a re-read through the
watching session can briefly return a state older than one just written here: the topic
cache keeps the newer of the two by znode version (and a decision made from an older
state is refused by its write's version check and decided again), and the watch armed by
that re-read fires again once its server catches up.

Started on first use (only the controller writes through it) and only ever used from the
coordinator's ZooKeeper thread.
"""

from __future__ import annotations

from kazoo.client import KazooClient

from brokerd.coordination.reconnect import new_client


class WriteSession:
    """The lazily started client of the controller's writes (see the module doc)."""

    def __init__(self, hosts: str, chroot: str, session_timeout_s: float) -> None:
        """``session_timeout_s`` is also how long the first use waits to connect."""
        self._hosts = hosts
        self._chroot = chroot
        self._session_timeout_s = session_timeout_s
        self._client: KazooClient | None = None

    @property
    def started(self) -> bool:
        return self._client is not None

    def client(self) -> KazooClient:
        """The connected client, started (with the broker's chroot) on the first call."""
        if self._client is None:
            client = new_client(self._hosts, self._session_timeout_s)
            client.start(timeout=self._session_timeout_s)
            if self._chroot:
                client.chroot = self._chroot  # the broker's session created it already
            self._client = client
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.stop()
            self._client.close()
            self._client = None
