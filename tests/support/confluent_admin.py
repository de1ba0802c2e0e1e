"""confluent-kafka's admin API as the tests use it, typed where its stubs and its behaviour
differ (confluent-kafka 2.16): a filter's None means "any", and describing named SCRAM users
gives one future per user."""

from __future__ import annotations

from concurrent.futures import Future

from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    UserScramCredentialsDescription,
)

# What AdminClient accepts (Producer and Consumer take any values); a dict[str, str] is not
# one, dicts being invariant.
ClientConfig = dict[str, str | int | float | bool]


def acl_filter(restype: ResourceType, name: str | None = None,
               pattern: ResourcePatternType = ResourcePatternType.ANY,
               principal: str | None = None, host: str | None = None,
               operation: AclOperation = AclOperation.ANY,
               permission: AclPermissionType = AclPermissionType.ANY) -> AclBindingFilter:
    """An ACL binding filter; every field left out matches any value."""
    # The stub types name, principal and host as str (inherited from AclBinding) although
    # AclBindingFilter documents and accepts None as "match any".
    return AclBindingFilter(restype, name, pattern, principal, host,  # type: ignore[arg-type]
                            operation, permission)


def scram_descriptions(admin: AdminClient, users: list[str]
                       ) -> dict[str, Future[UserScramCredentialsDescription]]:
    """DescribeUserScramCredentials for named users: a future per user."""
    futures = admin.describe_user_scram_credentials(users)
    assert isinstance(futures, dict), "named users are described one future each"
    return futures


def all_scram_descriptions(admin: AdminClient
                           ) -> Future[dict[str, UserScramCredentialsDescription]]:
    """DescribeUserScramCredentials for every user: one future of a dict by user name."""
    future = admin.describe_user_scram_credentials()
    assert isinstance(future, Future), "describing all users gives one future"
    return future
