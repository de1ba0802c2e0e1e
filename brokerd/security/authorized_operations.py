"""KIP-430's authorized operations: which operations a principal may do on a resource, as
the bitfield Metadata, DescribeCluster and DescribeGroups return when asked.

Bit ``n`` stands for the operation whose ``org.apache.kafka.common.acl.AclOperation`` code
is ``n`` (Read 3, Write 4, Create 5, Delete 6, Alter 7, Describe 8, ClusterAction 9,
DescribeConfigs 10, AlterConfigs 11, IdempotentWrite 12).  Only the operations Kafka lists
as applicable to the resource type are reported, each decided by the same authorizer that
enforces the ACLs, so its implications hold here too (All grants everything, Read, Write,
Delete or Alter imply Describe, AlterConfigs implies DescribeConfigs).  ClusterAction is
the brokers' own operation: no ACL here grants it, so only super users have it, as in
Kafka.  A response field whose operations were not asked for carries
:data:`NOT_PROVIDED`.

Pure: the decisions come in as a callable.
"""

from __future__ import annotations

from collections.abc import Callable

from brokerd.security.acl_bindings import OPERATION_TO_CODE
from brokerd.security.acls import AclOperation as Op
from brokerd.security.acls import ResourceType as Rt

# INT32 minimum: Kafka's "authorized operations not provided".
NOT_PROVIDED = -2147483648
CLUSTER_ACTION_CODE = 9

# Kafka's AclEntry.supportedOperations per resource type (ClusterAction apart, above).
APPLICABLE: dict[Rt, tuple[Op, ...]] = {
    Rt.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
               Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    Rt.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE),
    Rt.CLUSTER: (Op.CREATE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE,
                 Op.ALTER, Op.DESCRIBE),
    Rt.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
}


def operations_bitfield(resource_type: Rt, allowed: Callable[[Op], bool],
                        super_user: bool = False) -> int:
    """The bitfield of ``resource_type``'s applicable operations that ``allowed`` grants."""
    bits = 0
    for operation in APPLICABLE[resource_type]:
        if super_user or allowed(operation):
            bits |= 1 << OPERATION_TO_CODE[operation]
    if super_user and resource_type is Rt.CLUSTER:
        bits |= 1 << CLUSTER_ACTION_CODE
    return bits
