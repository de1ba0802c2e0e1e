"""Consumer groups across restarts (of the broker, of a static member) and with kcat/admin.

- After a broker restart (graceful or SIGKILL) the coordinator reloads the group's offsets
  by replaying ``__consumer_offsets``: a restarted group resumes exactly where it committed.
- A static member (``group.instance.id``) that crashes and comes back within its session
  gets its old partitions back and nobody else rebalances, not even after the old member's
  session would have expired.
- ``kcat -G`` consumes as a balanced consumer and commits; the admin client lists,
  describes and deletes groups.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.test_groups import (
    GROUP_BROKER_PROPS,
    covers_evenly,
    create_topic,
    shares,
)
from tests.integration.brokerd.test_groups_harness import (
    CommittedOffsetsWatch,
    ConsumerProcess,
    consume,
    produce,
    wait_for,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("restart", ["graceful", "crash"])
def test_group_resumes_from_committed_offsets_after_broker_restart(
        start_broker: Callable[..., BrokerProcess], restart: str) -> None:
    broker = start_broker(**GROUP_BROKER_PROPS)
    create_topic(broker.bootstrap, "ledger", 3)
    produce(broker.bootstrap, "ledger", 3, range(0, 300))
    records, _ = consume(broker.bootstrap, "ledger", "auditors", 300)
    assert sorted(value for _, _, value in records) == sorted(f"m-{i}" for i in range(300))

    if restart == "graceful":
        broker.stop(timeout=10)
    else:
        broker.kill()
    broker.start()
    produce(broker.bootstrap, "ledger", 3, range(300, 600))
    records, committed = consume(broker.bootstrap, "ledger", "auditors", 300)
    assert committed == {0: 100, 1: 100, 2: 100}
    assert sorted(value for _, _, value in records) == sorted(f"m-{i}" for i in range(300, 600))
    assert min(offset for _, offset, _ in records) == 100  # nothing before the commits re-read


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(**GROUP_BROKER_PROPS)
    create_topic(broker.bootstrap, "static", 6)
    session_s = 6.0
    members = [ConsumerProcess("confluent", broker.bootstrap, "static", "pinned",
                               instance_id=f"worker-{i}", session_ms=int(session_s * 1000)
                               ).start() for i in range(3)]
    try:
        wait_for(lambda: covers_evenly(members), 40, f"2+2+2 partitions, got {shares(members)}")
        time.sleep(1)  # let the generation settle: no assignments may follow from here on
        settled = [list(member.assignments) for member in members]
        kept = members[0].assignment
        members[0].kill()
        killed_at = time.monotonic()
        members[0] = ConsumerProcess("confluent", broker.bootstrap, "static", "pinned",
                                     instance_id="worker-0", session_ms=int(session_s * 1000)
                                     ).start()
        back_after = wait_for(lambda: bool(members[0].assignment), session_s,
                              "the restarted static member's assignment")
        assert members[0].assignment == kept
        # Past the moment the crashed instance's session would have expired: still no
        # rebalance anywhere.
        time.sleep(max(0.0, killed_at + session_s + 1.5 - time.monotonic()))
        assert [m.assignments for m in members[1:]] == settled[1:]
        assert members[0].assignments == [kept]
        print(f"static member back with its partitions after {back_after:.2f}s")
    finally:
        for member in members:
            member.stop()


def test_kcat_balanced_consumer_and_admin_group_apis(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(**GROUP_BROKER_PROPS)
    create_topic(broker.bootstrap, "clicks", 3)
    produce(broker.bootstrap, "clicks", 3, range(30))
    output = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-G", "kcat-group", "clicks", "-c", "30",
         "-f", "%p %o %s\n", "-X", "auto.offset.reset=earliest"],
        capture_output=True, timeout=30, check=True, text=True).stdout
    values = sorted(line.split()[2] for line in output.splitlines())
    assert values == sorted(f"m-{i}" for i in range(30))
    watch = CommittedOffsetsWatch(broker.port, "kcat-group", "clicks", 3)
    client = WireClient(broker.port)
    try:
        assert watch.fetch(client) == {0: 10, 1: 10, 2: 10}  # kcat committed as it closed
    finally:
        client.close()

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert [g.group_id for g in listed.valid] == ["kcat-group"]
    (described,) = admin.describe_consumer_groups(["kcat-group"]).values()
    assert described.result(10).state.name == "EMPTY"
    (deleted,) = admin.delete_consumer_groups(["kcat-group"]).values()
    deleted.result(10)
    assert admin.list_consumer_groups().result(10).valid == []
