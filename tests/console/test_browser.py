"""End to end in headless Chromium: a tenant admin creates a topic and an API key, records are
produced by a real client, a consumer group consumes half and stops, and the group page shows
lag, chart and status change live (no reload); another tenant's admin sees none of it.

The producer and the consumer authenticate with the API key the console created (SCRAM-SHA-512
over SASL_PLAINTEXT: the test broker has no TLS certificate) after the admin granted it ACLs
in the console, so they name the topic and group without the tenant prefix; the control plane
reads the cluster on the PLAINTEXT operator listener.  Screenshots go to
``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.services import REPO_ROOT

from .kafka_helpers import client_config, consume, group_consumer, produce, visible_topics
from .stack import Stack, control_plane

pytestmark = pytest.mark.integration

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOTS = REPO_ROOT / "test-artifacts" / "screenshots"
RECORDS = 200


@pytest.fixture
def stack(kafka_broker, zk_connect: str, tmp_path: Path) -> Iterator[Stack]:  # type: ignore[no-untyped-def]
    with control_plane(tmp_path / "control-plane", zk_connect, kafka_broker.bootstrap,
                       kafka_broker.sasl_bootstrap) as running:
        yield running


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    # `make test` installs Debian's chromium and chromium-driver: their absence is a failure.
    assert shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER), "chromium/chromedriver missing"
    # Chromium's own temporary directories (its singleton socket's) go in one removed
    # afterwards: quit() stops it before it removes them, and /tmp kept one per test.  A
    # short path: a socket's must fit in 108 bytes, which pytest's tmp_path can exceed.
    browser_tmp = tempfile.mkdtemp(prefix="chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--window-size=1280,1400"):
        options.add_argument(argument)
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER,
                                      env={**os.environ, "TMPDIR": browser_tmp})
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        driver = webdriver.Chrome(service=service, options=options)
        try:
            yield driver
        finally:
            driver.quit()
    finally:
        shutil.rmtree(browser_tmp, ignore_errors=True)


def wait(driver: webdriver.Chrome, condition: Callable[[webdriver.Chrome], object],
         timeout: float = 30.0) -> object:
    """Poll ``condition`` until it holds.  It may read an element of the page being
    navigated away from, which chromedriver reports as a stale element or as a node that
    "does not belong to the document" (seen once in make test): both poll again."""
    def polled(d: webdriver.Chrome) -> object:
        try:
            return condition(d)
        except WebDriverException as exc:
            if isinstance(exc, StaleElementReferenceException) or (
                    "does not belong to the document" in str(exc)):
                return False
            raise
    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(polled)


def sign_in(driver: webdriver.Chrome, stack: Stack, username: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{stack.url}/login/")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys("pw")
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait(driver, lambda d: "/login/" not in d.current_url)


def fill(driver: webdriver.Chrome, form: str, **values: str) -> None:
    for name, value in values.items():
        field = driver.find_element(By.CSS_SELECTOR, f"{form} [name={name}]")
        if field.tag_name == "select":
            Select(field).select_by_value(value)
        else:
            field.clear()
            field.send_keys(value)


def text(driver: webdriver.Chrome, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def grant(driver: webdriver.Chrome, operation: str, resource_type: str, name: str) -> None:
    fill(driver, "#grant-acl", principal="orders-app", operation=operation,
         resource_type=resource_type, pattern_type="LITERAL", resource_name=name)
    driver.find_element(By.CSS_SELECTOR, "#grant-acl button").click()
    # wait for this grant's own confirmation: an earlier grant's flash is still on the old page
    granted = f"{operation} {resource_type}:LITERAL:{name}"
    wait(driver, lambda d: any(granted in e.text for e in d.find_elements(By.CSS_SELECTOR, ".flash")))


def eventually(condition: Callable[[], bool], message: str | Callable[[], str],
               timeout: float = 30.0) -> None:
    """Poll ``condition`` until it holds; past ``timeout`` fail with ``message`` (a
    callable is asked at the failure, so it can report the state then, not at the start)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, message() if callable(message) else message
        time.sleep(0.3)


def test_live_lag_in_the_browser(stack: Stack, kafka_broker, browser: webdriver.Chrome) -> None:  # type: ignore[no-untyped-def]
    sign_in(browser, stack, "admin-acme")
    assert "Globex" not in browser.page_source
    browser.save_screenshot(str(SCREENSHOTS / "00-home.png"))
    browser.find_element(By.LINK_TEXT, "Topics").click()
    wait(browser, lambda d: d.find_elements(By.ID, "create-topic"))
    browser.save_screenshot(str(SCREENSHOTS / "01-topics-empty.png"))

    # one partition: a group's lag counts the partitions it has committed on, and a consumer
    # reading half of two partitions may well have committed on only one of them
    fill(browser, "#create-topic", name="orders", partitions="1", replication_factor="1",
         retention_hours="24")
    browser.find_element(By.CSS_SELECTOR, "#create-topic button").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-topic="orders"]'))
    browser.save_screenshot(str(SCREENSHOTS / "02-topic-created.png"))

    browser.get(f"{stack.url}/t/acme/api-keys/")
    fill(browser, "#create-account", name="orders-app")
    browser.find_element(By.CSS_SELECTOR, "#create-account button").click()
    wait(browser, lambda d: d.find_elements(  # the reloaded page: it offers the account
        By.CSS_SELECTOR, '#create-key select option[value="orders-app"]'))
    Select(browser.find_element(By.CSS_SELECTOR, "#create-key select")).select_by_value("orders-app")
    browser.find_element(By.CSS_SELECTOR, "#create-key button").click()
    secret = wait(browser, lambda d: d.find_elements(By.ID, "new-key-secret"))[0].text  # type: ignore[index]
    key = text(browser, "new-key-id")
    assert len(secret) >= 40 and "SCRAM-SHA-512" in browser.page_source
    assert f'"bootstrap.servers": "{kafka_broker.sasl_bootstrap}"' in browser.page_source
    browser.save_screenshot(str(SCREENSHOTS / "03-api-key-created.png"))

    browser.get(f"{stack.url}/t/acme/acls/")
    for operation, resource_type, name in (("Write", "Topic", "orders"), ("Read", "Topic", "orders"),
                                           ("Read", "Group", "billing")):
        grant(browser, operation, resource_type, name)
    browser.save_screenshot(str(SCREENSHOTS / "04-acls-granted.png"))

    # the Celery worker publishes topic, key and ACLs to ZooKeeper; the broker picks them up
    tenant_client = client_config(kafka_broker.sasl_bootstrap, key, secret)
    eventually(lambda: "orders" in visible_topics(tenant_client),
               "the key cannot see its topic\n" + stack.output())
    produce(tenant_client, "orders", RECORDS, partitions=1)

    consumed: list[int] = []
    consumer_done = threading.Event()

    def consume_half_slowly() -> None:
        consumer = group_consumer(tenant_client, "billing", "orders")
        try:
            for _ in range(RECORDS // 2 // 10):  # 10 records every 0.6 s: lag visibly falls
                consumed.append(consume(consumer, 10))
                time.sleep(0.6)
        finally:
            consumer.close()  # stops halfway: the group empties, no commits follow
            consumer_done.set()

    threading.Thread(target=consume_half_slowly, daemon=True).start()

    browser.get(f"{stack.url}/t/acme/consumer-groups/")
    group_link = 'tr[data-group="billing"] a'
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, group_link),
         timeout=40)  # arrives over the WebSocket: the list page is never reloaded
    browser.save_screenshot(str(SCREENSHOTS / "05-groups-live.png"))

    def open_group(driver: webdriver.Chrome) -> bool:
        # Found afresh each try: the next live update may have re-rendered the row (a
        # stale element in make test, 2026-12-06), and wait() polls again on that.
        links = driver.find_elements(By.CSS_SELECTOR, group_link)
        if links:
            links[0].click()
        return bool(links)

    wait(browser, open_group)
    wait(browser, lambda d: text(d, "live") == "live")
    browser.execute_script("window.notReloaded = true;")
    first_lag = int(text(browser, "total-lag"))
    first_points = browser.execute_script("return window.lagChart.data.datasets[0].data.length")
    statuses = {text(browser, "status")}

    def lag_changed(driver: webdriver.Chrome) -> bool:
        statuses.add(text(driver, "status"))
        return int(text(driver, "total-lag")) != first_lag

    wait(browser, lag_changed)
    assert "OK" in statuses, statuses
    wait(browser, lambda d: d.execute_script(
        "return window.lagChart.data.datasets[0].data.length") > first_points)
    browser.save_screenshot(str(SCREENSHOTS / "06-group-consuming.png"))

    assert consumer_done.wait(40) and sum(consumed) == RECORDS // 2
    wait(browser, lambda d: text(d, "status") in ("STOP", "STALL", "ERR")
         and d.find_elements(By.CSS_SELECTOR, "#partitions .status-STOP, #partitions .status-STALL"),
         timeout=60)
    assert int(text(browser, "total-lag")) == RECORDS // 2
    assert browser.execute_script("return window.notReloaded === true")
    assert "EMPTY" in text(browser, "state")
    browser.save_screenshot(str(SCREENSHOTS / "07-group-stopped.png"))

    browser.find_element(By.LINK_TEXT, "Reset offsets…").click()
    fill(browser, "#reset-form", strategy="earliest")
    browser.execute_script("window.notReloaded = true;")
    browser.find_element(By.CSS_SELECTOR, "#reset-form button[name=preview]").click()
    preview = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview td"))
    cells = [cell.text for cell in preview]  # type: ignore[attr-defined]
    assert cells[:6] == ["orders", "0", "100", "0", "200", "100"]  # the last: records re-read
    assert browser.execute_script("return window.notReloaded === true")  # htmx swapped it in
    browser.save_screenshot(str(SCREENSHOTS / "08-reset-preview.png"))
    browser.find_element(By.CSS_SELECTOR, "#reset-form button[name=apply]").click()
    browser.switch_to.alert.accept()  # "Move the committed offsets …?"
    wait(browser, lambda d: "reset" in d.find_element(By.CSS_SELECTOR, ".flash").text)
    wait(browser, lambda d: text(d, "total-lag") == str(RECORDS))  # the next snapshot, live

    sign_in(browser, stack, "admin-globex")
    for path in ("/t/acme/consumer-groups/billing/", "/t/acme/topics/", "/t/acme/api-keys/"):
        browser.get(stack.url + path)
        assert "not found" in browser.title.lower() and "orders-app" not in browser.page_source
    browser.get(f"{stack.url}/t/globex/consumer-groups/")
    assert "billing" not in browser.page_source
    browser.get(f"{stack.url}/t/globex/topics/")
    assert "orders" not in browser.page_source
    browser.save_screenshot(str(SCREENSHOTS / "09-other-tenant.png"))
