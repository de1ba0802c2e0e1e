"""The durability checker of the cluster tests and the failover benchmark (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.integration.cluster.sequence import assert_no_loss


@dataclass
class _Acked:
    """What :func:`assert_no_loss` reads of a SequenceProducer."""

    acked: dict[int, list[tuple[int | None, int]]]
    partitions: int = 1
    fatal: list[str] = field(default_factory=list)


def producer(acked: dict[int, list[tuple[int | None, int]]]) -> Any:
    """A stand-in producer that acknowledged ``acked`` (partition -> (offset, n))."""
    return _Acked(acked)


def test_every_acknowledged_number_at_its_offset_passes() -> None:
    assert_no_loss(producer({0: [(0, 0), (1, 1)]}), {0: [(0, 0), (1, 1), (2, 2)]})


def test_a_number_delivered_without_an_offset_only_has_to_be_stored() -> None:
    """librdkafka reports a batch it knows was persisted by an earlier attempt as
    delivered with no offset: not a loss while the number is in the log."""
    assert_no_loss(producer({0: [(0, 0), (None, 1)]}), {0: [(0, 0), (4, 1)]})
    with pytest.raises(AssertionError, match="7@None: stored there None, 7 stored at None"):
        assert_no_loss(producer({0: [(0, 0), (None, 7)]}), {0: [(0, 0), (1, 1)]})


def test_a_loss_says_what_is_stored_instead() -> None:
    with pytest.raises(AssertionError, match=r"6@2: stored there None, 6 stored at 3"):
        assert_no_loss(producer({0: [(2, 6)]}), {0: [(0, 4), (1, 5), (3, 6)]})


def test_duplicates_and_reordering_fail() -> None:
    with pytest.raises(AssertionError, match="duplicates or reordering"):
        assert_no_loss(producer({0: [(0, 0)]}), {0: [(0, 0), (1, 0)]})
