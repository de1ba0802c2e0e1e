"""KIP-430 bitfields: Kafka's operation codes, the operations applicable per resource type,
the authorizer's implications, and what only super users get."""

from __future__ import annotations

from brokerd.security import AclOperation as Op
from brokerd.security import Authorizer, Principal
from brokerd.security import ResourceType as Rt
from brokerd.security.authorized_operations import NOT_PROVIDED, operations_bitfield

READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def bits(*codes: int) -> int:
    return sum(1 << code for code in codes)


def test_kafkas_bit_numbering_and_not_provided() -> None:
    assert NOT_PROVIDED == -(2**31)
    assert operations_bitfield(Rt.TOPIC, lambda op: op in (Op.READ, Op.DESCRIBE)) == bits(
        READ, DESCRIBE)
    assert operations_bitfield(Rt.GROUP, lambda op: False) == 0


def test_super_users_get_every_applicable_operation_and_cluster_action() -> None:
    assert operations_bitfield(Rt.TOPIC, lambda op: False, super_user=True) == bits(
        READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
    assert operations_bitfield(Rt.GROUP, lambda op: False, super_user=True) == bits(
        READ, DESCRIBE, DELETE)
    assert operations_bitfield(Rt.CLUSTER, lambda op: False, super_user=True) == bits(
        CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
        IDEMPOTENT_WRITE)


def test_the_authorizers_implications_show_in_the_bitfield() -> None:
    authorizer = Authorizer(["User:ops"])
    authorizer.set_resource_acls("prefixed", "Topic", "acme.", (
        b'{"version":1,"acls":[{"principal":"User:acme.app","permissionType":"Allow",'
        b'"operation":"Write","host":"*"},{"principal":"User:acme.app",'
        b'"permissionType":"Allow","operation":"AlterConfigs","host":"*"}]}'))
    app = Principal("acme.app", "acme")

    def allowed(name: str) -> int:
        return operations_bitfield(Rt.TOPIC, lambda op: authorizer.authorize(
            app, op, Rt.TOPIC, name, "10.0.0.1"))

    # Write implies Describe; AlterConfigs implies DescribeConfigs.
    assert allowed("acme.orders") == bits(WRITE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
    assert allowed("globex.orders") == 0
