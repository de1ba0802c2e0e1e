"""Partition replicas hosted by this broker, leading or following: leader epochs, the ISR,
the high watermark and acks=all waits on top of the log, the fetchers that copy
leaders' logs, and the fetch-session rules (KIP-227) both followers and the Fetch handler
use.  Imports storage (and protocol) only, never ZooKeeper: ISR changes go
through the :class:`~brokerd.replication.isr_store.IsrStore` interface."""

from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import Partition

__all__ = ["Partition", "ReplicaManager"]
