"""Pure authentication, authorization and tenant-namespace logic for the broker.

No sockets, no ZooKeeper, no asyncio: the server drives these objects from its connections
and handlers, and the coordination layer feeds them ZooKeeper data.

- :mod:`.sasl` — PLAIN and SCRAM-SHA-256/512 server exchanges producing a :class:`Principal`.
- :mod:`.credentials` — ``/config/users/<api-key>`` JSON -> :class:`UserCredentials`.
- :mod:`.authorizer` / :mod:`.acls` — ``/acls/…`` JSON -> allow/deny decisions.
- :mod:`.namespace` — tenant name mapping (``orders`` <-> ``acme.orders``).
- :mod:`.login_throttle` — rate-limited logging of failed logins.
"""

from .acls import (
    CLUSTER_NAME,
    AclEntry,
    AclOperation,
    InvalidAclData,
    PatternType,
    ResourceType,
    parse_acls,
)
from .authorizer import Authorizer
from .credentials import (
    InvalidCredentials,
    ScramCredential,
    UserCredentials,
    parse_user_credentials,
)
from .login_throttle import FailureReport, LoginFailureLog
from .namespace import TenantNamespace
from .principal import ANONYMOUS, Principal
from .sasl import (
    SUPPORTED_MECHANISMS,
    CredentialLookup,
    SaslAuthenticator,
    SaslFailure,
    SaslStep,
    UnsupportedMechanism,
    create_authenticator,
)
from .scram_math import ScramMechanism

__all__ = [
    "ANONYMOUS",
    "CLUSTER_NAME",
    "SUPPORTED_MECHANISMS",
    "AclEntry",
    "AclOperation",
    "Authorizer",
    "CredentialLookup",
    "FailureReport",
    "InvalidAclData",
    "InvalidCredentials",
    "LoginFailureLog",
    "PatternType",
    "Principal",
    "ResourceType",
    "SaslAuthenticator",
    "SaslFailure",
    "SaslStep",
    "ScramCredential",
    "ScramMechanism",
    "TenantNamespace",
    "UnsupportedMechanism",
    "UserCredentials",
    "create_authenticator",
    "parse_acls",
    "parse_user_credentials",
]
