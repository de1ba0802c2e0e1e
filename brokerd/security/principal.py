"""Who a connection is, once authenticated: a Kafka principal and the tenant it belongs to.

Why a separate tiny module: the SASL mechanisms produce a :class:`Principal`, the authorizer
checks ACLs for it and the namespace is chosen from it, so all three share this one type.

Invariant: ``tenant is None`` means an operator principal, which sees the cluster's real names
(the identity namespace).  A tenant principal's name is ``<tenant>.<name>``; that invariant is
enforced where principals are built from ZooKeeper data (:mod:`brokerd.security.credentials`).
"""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated Kafka user, e.g. ``acme.orders`` of tenant ``acme``."""

    name: str
    tenant: str | None

    @property
    def kafka_principal(self) -> str:
        """The form ACLs and super-user lists use: ``User:<name>``."""
        return f"{USER_TYPE}:{self.name}"

    @property
    def is_operator(self) -> bool:
        return self.tenant is None


# Connections on the operator PLAINTEXT listener do not authenticate; like Kafka they act as
# ``User:ANONYMOUS``, an operator (no tenant).  Whether it may do anything is still the
# authorizer's super-user list, so a deployment decides explicitly.
ANONYMOUS = Principal("ANONYMOUS", None)
