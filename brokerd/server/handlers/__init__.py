"""The registry of served APIs: every module in this package that defines ``API_KEY``.

Each handler module exposes ``API_KEY``, ``MIN_VERSION``, ``MAX_VERSION``,
``async def handle(broker, request: Request[bodies.<Api>Request]) -> bodies.<Api>Response``
(``| None``: no response, e.g. acks=0; the TypedDicts are ``brokerd.protocol.bodies``) and,
when tenants may call it, ``TENANCY`` (see :mod:`brokerd.server.tenancy_rules`).  This
table is what ApiVersions advertises, dispatch serves and tenancy applies, and
docs/brokerd.md's API table is checked against it: adding an API means adding its schema
module (``brokerd.protocol.messages``) and its handler module, nothing else.  A version
appears here only when its handler really implements it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request
    from brokerd.server.tenancy import ApiNames

Handler = Callable[["HandlerContext", "Request"], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class ApiEntry:
    """One served API: its key, version range, handler and tenancy rules (None: operators
    only)."""

    api_key: ApiKey
    min_version: int
    max_version: int
    handle: Handler
    tenancy: ApiNames | None = None

    @cached_property
    def name(self) -> str:
        """The metrics' label, read on every request: computed once (an enum's name is a
        Python-level property)."""
        return self.api_key.name.lower()


def _entry(module: ModuleType) -> ApiEntry:
    return ApiEntry(module.API_KEY, module.MIN_VERSION, module.MAX_VERSION, module.handle,
                    getattr(module, "TENANCY", None))


def _build_table() -> dict[int, ApiEntry]:
    modules = [importlib.import_module(f"{__name__}.{info.name}")
               for info in pkgutil.iter_modules(__path__)]
    return {module.API_KEY: _entry(module) for module in modules if hasattr(module, "API_KEY")}


# Keyed by the int api key of a request header (ApiKey members hash equal to their ints).
API_TABLE: dict[int, ApiEntry] = _build_table()
