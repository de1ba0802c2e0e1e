"""End to end in headless Chromium: a KIP-848 consumer group (confluent-kafka,
``group.protocol=consumer``, a tenant's API key) on the console's group pages and in the REST
lag API, with its type, assignor, group / assignment epochs, each member's epoch and
assignment, and its lag, updated live; another tenant sees none of it.  Screenshots go to
``test-artifacts/screenshots/`` (``30-…`` to ``33-…``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import cast

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from selenium import webdriver
from selenium.webdriver.common.by import By

from .kafka_helpers import client_config, produce, visible_topics
from .stack import Stack
from .test_browser import SCREENSHOTS, browser, eventually, grant, sign_in, stack, text, wait  # noqa: F401
from .test_topic_browser import browser_fetch, create_key, create_topic

pytestmark = pytest.mark.integration

PARTITIONS, FIRST, MORE = 4, 100, 60


class Members:
    """Two consumer-protocol members, polled from one thread (confluent-kafka consumers are
    not shared across threads): they read and commit everything, and on ``pause`` stop
    fetching while staying in the group, so records produced afterwards are lag.

    A commit sent while the group moves to a new epoch can carry the member's previous
    epoch and be refused with STALE_MEMBER_EPOCH (Kafka's rule before KIP-1251), as any
    application may see during a rebalance: the member commits that record again after
    its next poll, which brings its new epoch."""

    def __init__(self, config: dict) -> None:
        self.config, self.read = config, 0
        self.pause, self.paused, self.stop = threading.Event(), threading.Event(), threading.Event()
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        consumers = [Consumer({**self.config, "group.id": "kip", "group.protocol": "consumer",
                               "client.id": f"kip-{i}", "auto.offset.reset": "earliest",
                               "enable.auto.commit": False,
                               **({"group.instance.id": "kip-static-1"} if i == 1 else {})})
                     for i in (1, 2)]
        # Per consumer, the offsets read but not committed yet (a commit was refused).
        uncommitted: list[dict[tuple[str, int], TopicPartition]] = [{} for _ in consumers]
        try:
            self._poll(consumers, uncommitted)
        except Exception as exc:  # reported by the waits in the test, not lost in a thread
            self.errors.append(repr(exc))
            raise
        finally:
            for consumer in consumers:
                consumer.close()

    def _poll(self, consumers: list[Consumer],
              uncommitted: list[dict[tuple[str, int], TopicPartition]]) -> None:
        for consumer in consumers:
            consumer.subscribe(["orders"])
        while not self.stop.is_set():
            if self.pause.is_set() and not self.paused.is_set():
                for consumer in consumers:
                    consumer.pause(consumer.assignment())
                self.paused.set()
            for index, consumer in enumerate(consumers):
                message = consumer.poll(0.1)
                if message is not None and message.error():
                    self.errors.append(str(message.error()))
                    continue
                if message is not None:
                    self.read += 1
                    topic, partition = cast(str, message.topic()), cast(int, message.partition())
                    uncommitted[index][(topic, partition)] = TopicPartition(
                        topic, partition, cast(int, message.offset()) + 1)
                if uncommitted[index]:
                    self._commit(consumer, uncommitted[index])

    @staticmethod
    def _commit(consumer: Consumer, uncommitted: dict[tuple[str, int], TopicPartition]) -> None:
        owned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
        for moved in uncommitted.keys() - owned:  # its new owner reads and commits it
            del uncommitted[moved]
        if not uncommitted:
            return
        try:
            consumer.commit(offsets=list(uncommitted.values()), asynchronous=False)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
                raise
            return  # tried again after the next poll
        uncommitted.clear()

    def __enter__(self) -> Members:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(30)


@pytest.fixture
def tenant_key(stack: Stack, kafka_broker, browser: webdriver.Chrome) -> Iterator[dict]:  # type: ignore[no-untyped-def]  # noqa: F811
    """acme's topic ``orders`` (4 partitions) and an API key allowed to use it and group kip,
    all made in the console; the key's client settings."""
    sign_in(browser, stack, "admin-acme")
    create_topic(browser, stack, "orders", PARTITIONS)
    key, secret, _ = create_key(browser, stack, "orders-app")
    browser.get(f"{stack.url}/t/acme/acls/")
    for operation, resource_type, name in (("Write", "Topic", "orders"), ("Read", "Topic", "orders"),
                                           ("Read", "Group", "kip")):
        grant(browser, operation, resource_type, name)
    config = client_config(kafka_broker.sasl_bootstrap, key, secret)
    eventually(lambda: "orders" in visible_topics(config),
               "the key cannot see its topic\n" + stack.output(), timeout=40)
    yield config


def members_table(driver: webdriver.Chrome) -> list[dict[str, str]]:
    """The members table's rows, read in one script: live updates replace the rows every
    snapshot, so element handles would go stale between reads."""
    return driver.execute_script("""
        return [...document.querySelectorAll("#members tbody tr[data-member]")].map((row) =>
            Object.fromEntries([...row.cells].map((cell, i) =>
                [cell.dataset.field || String(i), cell.textContent.trim()])));""")


def reconciled(driver: webdriver.Chrome, lag: int) -> bool:
    """Two members, each at the assignment epoch with its whole target, and the given lag."""
    rows = members_table(driver)
    epoch = text(driver, "assignment-epoch")
    return (len(rows) == 2 and text(driver, "total-lag") == str(lag)
            and all(r["member_epoch"] == epoch and r["reconciliation"] == "reconciled"
                    and r["assignment"] == r["target_assignment"] for r in rows))


def test_consumer_protocol_group_page_and_rest_api(stack: Stack, tenant_key: dict,  # noqa: F811
                                                   browser: webdriver.Chrome) -> None:  # noqa: F811
    produce(tenant_key, "orders", FIRST, PARTITIONS)
    with Members(tenant_key) as members:
        eventually(lambda: members.read == FIRST,
                   lambda: f"read {members.read} of {FIRST}: {members.errors[:3]}", timeout=60)

        browser.get(f"{stack.url}/t/acme/consumer-groups/")
        wait(browser, lambda d: d.find_elements(
            By.XPATH, '//tr[@data-group="kip"]/td[2][text()="consumer"]'), timeout=40)
        browser.save_screenshot(str(SCREENSHOTS / "30-groups-with-consumer-protocol.png"))

        browser.get(f"{stack.url}/t/acme/consumer-groups/kip/")
        assert text(browser, "group-type") == "consumer" and text(browser, "assignor") == "uniform"
        wait(browser, lambda d: reconciled(d, 0), timeout=40)

        members.pause.set()  # still members, no longer fetching: what follows is lag
        assert members.paused.wait(20)
        browser.execute_script("window.notReloaded = true;")
        produce(tenant_key, "orders", MORE, PARTITIONS)
        wait(browser, lambda d: reconciled(d, MORE), timeout=40)  # pushed over the WebSocket
        assert browser.execute_script("return window.notReloaded === true")
        assert text(browser, "state") == "STABLE"
        group_epoch, assignment_epoch = int(text(browser, "group-epoch")), int(
            text(browser, "assignment-epoch"))
        assert group_epoch >= 2 and assignment_epoch == group_epoch  # two joins, assigned
        rows = members_table(browser)
        assert sorted(r["2"] for r in rows) == ["kip-1", "kip-2"]  # client ids
        assert sorted(r["1"] for r in rows) == ["kip-static-1", "–"]  # instance ids
        owned = [r["assignment"].split() for r in rows]
        assert sorted(len(o) for o in owned) == [2, 2]  # uniform: 2 + 2
        assert sorted(sum(owned, [])) == [f"orders-{p}" for p in range(PARTITIONS)]
        assert "acme." not in browser.page_source
        browser.save_screenshot(str(SCREENSHOTS / "31-consumer-protocol-group.png"))
        browser.execute_script("document.getElementById('members').scrollIntoView()")
        browser.save_screenshot(str(SCREENSHOTS / "32-consumer-protocol-members.png"))

        answer = browser_fetch(browser, "/api/v1/tenants/acme/consumer-groups/kip/")
        assert answer["status"] == 200, answer
        detail = json.loads(answer["text"])
        assert (detail["group_type"], detail["assignor"], detail["total_lag"]) == (
            "consumer", "uniform", MORE)
        assert (detail["group_epoch"], detail["assignment_epoch"]) == (group_epoch, assignment_epoch)
        assert all(m["member_epoch"] == assignment_epoch and m["reconciled"]
                   and m["subscribed_topics"] == ["orders"] for m in detail["members"])
        assert sorted(tuple(tp) for m in detail["members"] for tp in m["assignment"]) == [
            ("orders", p) for p in range(PARTITIONS)]
        assert sum(p["lag"] for p in detail["partitions"]) == MORE
        assert all(p["committed"] is not None for p in detail["partitions"])
        listed = json.loads(browser_fetch(browser, "/api/v1/tenants/acme/consumer-groups/")["text"])
        assert [(g["group"], g["group_type"], g["members"]) for g in listed["results"]] == [
            ("kip", "consumer", 2)]

        sign_in(browser, stack, "admin-globex")
        browser.get(f"{stack.url}/t/acme/consumer-groups/kip/")
        assert "not found" in browser.title.lower() and "kip-static-1" not in browser.page_source
        assert browser_fetch(browser, "/api/v1/tenants/acme/consumer-groups/kip/")["status"] in (403, 404)
        browser.get(f"{stack.url}/t/globex/consumer-groups/")
        assert 'data-group="kip"' not in browser.page_source
        browser.save_screenshot(str(SCREENSHOTS / "33-consumer-group-other-tenant.png"))
