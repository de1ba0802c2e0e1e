"""The registered-broker snapshot: bounce detection and the re-list after a registration
vanished mid-read (both without ZooKeeper: the client is a stand-in)."""

from __future__ import annotations

from typing import Any

from kazoo.exceptions import NoNodeError

from brokerd.coordination.broker_watch import LiveBroker, bounced, read_live_brokers
from brokerd.coordination.znodes import BrokerRegistration


def _live(broker_id: int, epoch: int) -> LiveBroker:
    return LiveBroker(BrokerRegistration(broker_id, "127.0.0.1", 9000 + broker_id), epoch)


def test_a_broker_registered_under_a_new_epoch_bounced() -> None:
    previous = {1: _live(1, 10), 2: _live(2, 11)}
    current = {1: _live(1, 10), 2: _live(2, 40), 3: _live(3, 41)}
    assert bounced(previous, current) == {2}  # 3 is new, not bounced; 1 unchanged
    assert bounced({}, current) == set()


class _VanishingOnce:
    """Lists brokers 1 and 2; broker 1's registration is replaced while the first
    listing is read (deleted, then created again under a new czxid)."""

    def __init__(self) -> None:
        self.listings = 0
        self.watches: list[Any] = []

    def get_children(self, path: str, watch: Any = None) -> list[str]:
        self.listings += 1
        self.watches.append(watch)
        return ["1", "2"]

    def get(self, path: str) -> tuple[bytes, Any]:
        broker_id = int(path.rsplit("/", 1)[1])
        if broker_id == 1 and self.listings == 1:
            raise NoNodeError()
        registration = BrokerRegistration(broker_id, "127.0.0.1", 9000 + broker_id)

        class Stat:
            czxid = 100 + broker_id + self.listings
        return registration.encode(0), Stat()


def test_a_registration_vanishing_mid_read_is_listed_again_not_dropped() -> None:
    client = _VanishingOnce()
    live = read_live_brokers(client, watch=print)  # type: ignore[arg-type]
    assert set(live) == {1, 2}
    assert client.listings == 2 and client.watches == [print, print]
    assert live[1].epoch == 103
