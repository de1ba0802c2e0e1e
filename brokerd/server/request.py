"""A decoded request as handlers see it."""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from brokerd.protocol import RequestHeader

if TYPE_CHECKING:
    from brokerd.server.connection import Connection


#: The body's type: a handler names its API's TypedDict (``Request[bodies.FetchRequest]``)
#: so mypy checks the keys it reads; at runtime every body is the decoder's plain dict.
Body = TypeVar("Body")


@dataclass
class Request(Generic[Body]):
    """One decoded request and where it came from (the seam for principal/tenant later)."""

    header: RequestHeader
    body: Body
    connection: Connection
    # Size of the whole request (header + body) as framed: what a produce quota is charged.
    frame_bytes: int = 0

    @property
    def version(self) -> int:
        return self.header.api_version


Response = TypeVar("Response")


class Later(Generic[Response]):
    """A response that is ready only after the handler has returned: an acks=all produce
    whose data is appended and now waits for its replicas.

    Why: a connection answers in request order, and used to process nothing else until
    the answer was written, so a producer's pipelined requests each waited out the
    previous one's replication round before being appended.  Handed a ``Later``, the
    connection goes on with its next request at once and writes this answer when
    ``response`` (a coroutine, awaited exactly once, in request order) returns it.
    """

    __slots__ = ("response",)

    def __init__(self, response: Coroutine[Any, Any, Response]) -> None:
        self.response = response


def client_host(peer: str) -> str:
    """``/<ip>`` from a connection's ``<ip>:<port>`` peer (the IP may hold colons: IPv6), as
    Kafka writes a member's host in DescribeGroups and ConsumerGroupDescribe."""
    host, _, _ = peer.rpartition(":")
    return "/" + (host or peer)
