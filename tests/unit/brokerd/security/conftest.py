"""Shared fixture: the credential store of :mod:`.known_users` (PBKDF2 runs once per session)."""

from __future__ import annotations

import pytest

from brokerd.security import UserCredentials
from tests.unit.brokerd.security.known_users import known_users


@pytest.fixture(scope="session")
def users() -> dict[str, UserCredentials]:
    return known_users()
