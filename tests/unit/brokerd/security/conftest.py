"""Shared fixtures: a credential store holding one tenant key and one operator user."""

from __future__ import annotations

import pytest

from brokerd.security import UserCredentials, parse_user_credentials
from tests.unit.brokerd.security.scram_client import user_znode

TENANT_KEY = "K3YACMEORDERS000"
TENANT_SECRET = "s3cret-for-acme"
OPERATOR_USER = "admin"
OPERATOR_SECRET = "operator-secret"


@pytest.fixture(scope="session")
def users() -> dict[str, UserCredentials]:
    return {
        TENANT_KEY: parse_user_credentials(TENANT_KEY, user_znode(TENANT_SECRET)),
        OPERATOR_USER: parse_user_credentials(
            OPERATOR_USER, user_znode(OPERATOR_SECRET, principal=None, tenant=None)),
    }
