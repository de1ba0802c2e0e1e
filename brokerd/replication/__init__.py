"""Partition replicas hosted by this broker: leadership epoch and high watermark on top of
the log.  Single replica for now; followers, ISR tracking and acks=all waiting land here.
Imports storage (and protocol) only, never ZooKeeper."""

from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import Partition

__all__ = ["Partition", "ReplicaManager"]
