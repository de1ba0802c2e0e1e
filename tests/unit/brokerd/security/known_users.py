"""The users the SASL tests log in as: one tenant API key and one operator user."""

from __future__ import annotations

from brokerd.security import UserCredentials, parse_user_credentials
from tests.unit.brokerd.security.scram_client import user_znode

TENANT_KEY = "K3YACMEORDERS000"
TENANT_SECRET = "s3cret-for-acme"
OPERATOR_USER = "admin"
OPERATOR_SECRET = "operator-secret"


def known_users() -> dict[str, UserCredentials]:
    """A credential store as the coordination layer would hold it, keyed by SASL username."""
    return {
        TENANT_KEY: parse_user_credentials(TENANT_KEY, user_znode(TENANT_SECRET)),
        OPERATOR_USER: parse_user_credentials(
            OPERATOR_USER, user_znode(OPERATOR_SECRET, principal=None, tenant=None)),
    }
