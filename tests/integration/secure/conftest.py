"""Fixtures: the local CA and broker certificate of scripts/certs.sh, once per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.secure.secure_cluster import make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("certs"))
