"""Awaiting, from the event loop, work done on the broker's one ZooKeeper thread.

Kazoo blocks while disconnected, so a caller (a request handler) gives up after a
timeout and answers with a retriable error.  Giving up does not cancel the work: an
operation still queued behind others (30 topics of one CreateTopics request, say) would
otherwise be dropped while one already running completes, so a timed-out request's
outcome would depend on the queue.  It always happens; the error means "not known yet",
as Kafka's REQUEST_TIMED_OUT does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any, TypeVar

from kazoo.exceptions import KazooException

log = logging.getLogger(__name__)
T = TypeVar("T")
# How long a request handler waits for a ZooKeeper operation before answering with a
# retriable error (the broker keeps serving data meanwhile).
OPERATION_TIMEOUT_S = 10.0


class CoordinationUnavailableError(Exception):
    """ZooKeeper could not complete an operation (connection loss, session expiry…).

    Raised instead of kazoo's own exceptions so that no package above this one needs to
    know kazoo; handlers map it to a retriable protocol error."""


async def await_zk_work(future: concurrent.futures.Future[T], timeout: float) -> T:
    """The outcome of ``future`` (run on the ZooKeeper thread) within ``timeout`` seconds,
    in this package's exceptions; the work goes on if the wait runs out."""
    wrapped = asyncio.wrap_future(future)
    try:
        return await asyncio.wait_for(asyncio.shield(wrapped), timeout)
    except KazooException as exc:
        raise CoordinationUnavailableError(f"ZooKeeper: {exc!r}") from exc
    except TimeoutError:
        wrapped.add_done_callback(_outcome_unawaited)
        raise CoordinationUnavailableError(f"ZooKeeper: no answer in {timeout}s") from None


def _outcome_unawaited(future: asyncio.Future[Any]) -> None:
    """Done callback of work whose caller gave up: take its outcome, so that a failure is
    logged once here rather than as a never-retrieved exception."""
    if not future.cancelled() and (exc := future.exception()) is not None:
        log.warning("ZooKeeper operation finished after its caller gave up: %r", exc)
