"""Broker-side partition assignors of the consumer group protocol (KIP-848).

With the new protocol the coordinator, not a group leader, computes the target assignment;
members pick an assignor by name with ``group.remote.assignor``.  Each assignor is a pure
function ``(members, topics) -> assignment`` (see :mod:`.spec`), so it can be tested in
milliseconds and gives the same answer for the same input on every coordinator.

- ``uniform`` (Kafka's default): balanced and sticky; a member keeps what it owns as long
  as balance allows, so a join or leave moves only the partitions it has to.
- ``range``: per topic, consecutive partition ranges in member order (the classic
  ``RangeAssignor``): co-partitioned topics land on the same member.
- ``roundrobin``: every subscribed partition dealt to members in turn (the classic
  ``RoundRobinAssignor``).
"""

from __future__ import annotations

from brokerd.groups.assignors.range import assign_range
from brokerd.groups.assignors.roundrobin import assign_roundrobin
from brokerd.groups.assignors.spec import Assignment, Assignor, MemberSpec, Topics
from brokerd.groups.assignors.uniform import assign_uniform

DEFAULT_ASSIGNOR = "uniform"

ASSIGNORS: dict[str, Assignor] = {
    "uniform": assign_uniform,
    "range": assign_range,
    "roundrobin": assign_roundrobin,
}

__all__ = ["ASSIGNORS", "DEFAULT_ASSIGNOR", "Assignment", "Assignor", "MemberSpec", "Topics"]
