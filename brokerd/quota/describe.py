"""Which configured quota entities a DescribeClientQuotas filter selects (KIP-546).

A filter is a list of components, one per entity type (``user``, ``client-id``; ``ip``
quotas are not kept by this service, so a component on ``ip`` matches nothing): an exact
name, the ``<default>`` entity, or any specified (non-default) name.  ``strict`` keeps
only entities made of exactly the filtered types; otherwise an entity needs at least
them.  No components and not strict: every entity.  Pure: the broker passes its
:class:`~brokerd.quota.resolution.QuotaConfigStore` entities in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from brokerd.quota.resolution import DEFAULT_ENTITY, QuotaType

USER, CLIENT_ID, IP = "user", "client-id", "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

# (user, client id) as the store keys entities: None where the entity has no such part.
Entity = tuple[str | None, str | None]
# An answer's entity: (entity type, name; None for the default entity) pairs, and values.
Described = tuple[list[tuple[str, str | None]], dict[str, float]]


class InvalidFilter(ValueError):
    """Kafka's INVALID_REQUEST for a filter it cannot apply."""


@dataclass(frozen=True)
class Component:
    entity_type: str
    match_type: int
    match: str | None


def describe(entities: Mapping[Entity, Mapping[QuotaType, float]],
             components: Sequence[Component], strict: bool) -> list[Described]:
    """The entities the filter selects with their quota values, in a stable order."""
    wanted = _validated(components)
    found: list[Described] = []
    for (user, client_id), limits in sorted(entities.items(), key=lambda e: (
            e[0][0] or "", e[0][1] or "")):
        parts = {USER: user, CLIENT_ID: client_id}
        present = {kind for kind, name in parts.items() if name is not None}
        if strict and present != set(wanted):
            continue
        if all(_matches(parts.get(kind), component) for kind, component in wanted.items()):
            entity = [(kind, None if name == DEFAULT_ENTITY else name)
                      for kind, name in parts.items() if name is not None]
            found.append((entity, {quota.value: limit for quota, limit in limits.items()}))
    return found


def _validated(components: Sequence[Component]) -> dict[str, Component]:
    wanted: dict[str, Component] = {}
    for component in components:
        if component.entity_type not in (USER, CLIENT_ID, IP):
            raise InvalidFilter(f"custom entity type {component.entity_type!r} not supported")
        if component.entity_type in wanted:
            raise InvalidFilter(f"duplicate filter component entity type "
                                f"{component.entity_type!r}")
        if component.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise InvalidFilter(f"unknown match type {component.match_type}")
        if component.match_type == MATCH_EXACT and component.match is None:
            raise InvalidFilter("an exact match needs a name")
        wanted[component.entity_type] = component
    return wanted


def _matches(name: str | None, component: Component) -> bool:
    if name is None:  # the entity has no part of this type (always so for ip)
        return False
    if component.match_type == MATCH_DEFAULT:
        return name == DEFAULT_ENTITY
    if component.match_type == MATCH_SPECIFIED:
        return name != DEFAULT_ENTITY
    return name == component.match
