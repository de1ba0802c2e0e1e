"""Issue 20 in headless Chromium against the `make run` configuration (service.settings.dev:
DEBUG off), a real broker, daphne and Celery: forms that write redirect (a reload after "Create
key" creates nothing), quota edits in the console reach the broker, destructive actions ask
first, lists search and page, an invited tenant admin signs in with the one-time link and
invites a read-only colleague who can change nothing, a slow or stopped broker gives a clear
message instead of a 500, and no answer is Django's debug page.  Screenshots go to
``test-artifacts/screenshots/`` (prefix ``20-``).
"""

from __future__ import annotations

import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from dashboard.quota_usage import scrape
from tenants.zookeeper import client as zookeeper_client

from .kafka_helpers import client_config, consume, create_topic, group_consumer, produce
from .stack import Stack
from .test_browser import SCREENSHOTS, browser, eventually, fill, grant, sign_in, stack, text, wait

pytestmark = pytest.mark.integration
__all__ = ["browser", "stack"]  # fixtures shared with test_browser

DEBUG_PAGE_MARKERS = ("DEBUG = True", "Using the URLconf", "Traceback (most recent call last)",
                      "technical_500", "Request Method:", "Django Version:")
seen_pages: list[tuple[str, str]] = []


def shot(driver: webdriver.Chrome, name: str) -> None:
    driver.save_screenshot(str(SCREENSHOTS / f"20-{name}.png"))


def page(driver: webdriver.Chrome) -> str:
    """The current page's source, checked for Django's debug page (and kept for the end)."""
    source = driver.page_source
    seen_pages.append((driver.current_url, source))
    assert not any(marker in source for marker in DEBUG_PAGE_MARKERS), driver.current_url
    return source


def click_confirmed(driver: webdriver.Chrome, selector: str, accept: bool) -> str:
    """Click a button that asks first; answer the question; return it."""
    driver.find_element(By.CSS_SELECTOR, selector).click()
    alert = WebDriverWait(driver, 5).until(expected_conditions.alert_is_present())
    assert alert is not False
    question = alert.text
    alert.accept() if accept else alert.dismiss()
    return question


def flash(driver: webdriver.Chrome, fragment: str) -> None:
    wait(driver, lambda d: any(fragment in e.text for e in d.find_elements(By.CSS_SELECTOR, ".flash")))


def produce_limit(zk, user: str) -> float | None:  # type: ignore[no-untyped-def]
    """The produce quota limit the broker applies to ``user`` now (its metrics)."""
    peak = scrape(zk).peak("produce", user, None)
    return peak.limit if peak is not None else None


def test_keys_quotas_confirmations_and_search(stack: Stack, kafka_broker, zk_connect: str,  # type: ignore[no-untyped-def]
                                              browser: webdriver.Chrome) -> None:
    sign_in(browser, stack, "admin-acme")
    for name in ("orders", "payments"):
        browser.get(f"{stack.url}/t/acme/topics/")
        fill(browser, "#create-topic", name=name, partitions="1", replication_factor="1",
             retention_hours="24")
        browser.find_element(By.CSS_SELECTOR, "#create-topic button").click()
        wait(browser, expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, f'tr[data-topic="{name}"]')))
    fill(browser, "form.search", q="pay")
    browser.find_element(By.CSS_SELECTOR, "form.search button").click()
    wait(browser, lambda d: "q=pay" in d.current_url)
    rows = [r.get_attribute("data-topic") for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-topic]")]
    assert rows == ["payments"] and "1–1 of 1" in page(browser)
    shot(browser, "01-topics-search")

    # post/redirect/get: the secret is shown once, on the page the creation redirected to
    browser.get(f"{stack.url}/t/acme/api-keys/")
    fill(browser, "#create-account", name="orders-app")
    browser.find_element(By.CSS_SELECTOR, "#create-account button").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#create-key select option[value=orders-app]"))
    fill(browser, "#create-key", principal="orders-app")
    browser.find_element(By.CSS_SELECTOR, "#create-key button").click()
    secret = wait(browser, lambda d: d.find_elements(By.ID, "new-key-secret"))[0].text  # type: ignore[index]
    key = text(browser, "new-key-id")
    assert browser.current_url == f"{stack.url}/t/acme/api-keys/" and len(secret) >= 40
    shot(browser, "02-api-key-created")
    browser.refresh()  # a GET: no form is sent again
    wait(browser, lambda d: d.find_elements(By.ID, "keys"))
    assert not browser.find_elements(By.ID, "new-key-secret") and secret not in page(browser)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#keys td code")) == 1  # still one key
    shot(browser, "03-api-keys-after-reload")

    browser.get(f"{stack.url}/t/acme/acls/")
    grant(browser, "Write", "Topic", "orders")
    shot(browser, "04a-acls-search-pages")
    browser.get(f"{stack.url}/t/acme/invoices/?q=2026")
    assert "No invoice matches" in page(browser)
    shot(browser, "04b-invoices-search")
    tenant_client = client_config(kafka_broker.sasl_bootstrap, key, secret)

    # a quota set in the console reaches the broker; a change too; removal falls back
    zk = zookeeper_client(zk_connect)
    user = "acme.orders-app"
    for producer_rate in ("20480", "40960"):
        browser.get(f"{stack.url}/t/acme/quotas/")
        edit = browser.find_elements(By.LINK_TEXT, "Change…")
        if edit:
            edit[0].click()
            wait(browser, lambda d: "edit=" in d.current_url)
        fill(browser, "#set-quota", principal="orders-app", producer_byte_rate=producer_rate)
        browser.find_element(By.CSS_SELECTOR, "#set-quota button").click()
        flash(browser, "Quota users/acme.orders-app set")

        def applied(rate: str = producer_rate) -> bool:
            try:
                produce(tenant_client, "orders", 20, partitions=1)
            except AssertionError:  # the key's SCRAM credential and ACL are still on their way
                return False
            return produce_limit(zk, user) == float(rate)

        eventually(applied, f"the broker never applied {producer_rate} B/s\n" + stack.output(),
                   timeout=60)
    browser.refresh()  # "now" as the broker measures it against the new limit
    row = browser.find_element(By.CSS_SELECTOR, 'tr[data-entity="users/acme.orders-app"]').text
    assert "40 KiB/s" in row and "plan default: unlimited" in row
    shot(browser, "04-quotas-override")
    assert "falls back" in click_confirmed(browser, "#overrides button.danger", accept=True)
    flash(browser, "removed")
    # removal withdraws the entity from ZooKeeper, where the brokers read it (the broker's
    # kafka_quota_limit metric was seen to keep the old value after that: a brokerd matter)
    eventually(lambda: not zk.exists(f"/config/users/{user}"),
               "the removed override stayed in ZooKeeper\n" + stack.output())
    assert "No overrides" in page(browser)
    shot(browser, "05-quotas-removed")

    # revoking asks first: "cancel" keeps the key, "OK" revokes it
    browser.get(f"{stack.url}/t/acme/api-keys/")
    question = click_confirmed(browser, "#keys button.danger", accept=False)
    assert key in question and "Revoke" in question
    assert browser.find_elements(By.CSS_SELECTOR, "#keys td code")
    click_confirmed(browser, "#keys button.danger", accept=True)
    flash(browser, f"API key {key} revoked")
    assert not browser.find_elements(By.CSS_SELECTOR, "#keys td code")

    browser.get(f"{stack.url}/t/acme/topics/payments/delete/")
    fill(browser, "form[data-confirm]", confirm="payments")
    assert "payments" in click_confirmed(browser, "form[data-confirm] button", accept=False)
    assert "/delete/" in browser.current_url  # nothing sent


def test_invited_admin_and_read_only_colleague(stack: Stack, browser: webdriver.Chrome) -> None:
    sign_in(browser, stack, "op")
    browser.get(f"{stack.url}/ops/tenants/")
    fill(browser, "form.search", q="glob")
    browser.find_element(By.CSS_SELECTOR, "form.search button").click()
    wait(browser, lambda d: "q=glob" in d.current_url)
    assert [r.get_attribute("data-tenant") for r in browser.find_elements(
        By.CSS_SELECTOR, "tr[data-tenant]")] == ["globex"]
    assert "globex" in click_confirmed(browser, "#tenants button.danger", accept=False)
    shot(browser, "06-ops-tenants-search")

    browser.get(f"{stack.url}/ops/tenants/")
    browser.find_element(By.CSS_SELECTOR, 'tr[data-tenant="acme"] a[href$="/team/"]').click()
    fill(browser, "#invite", email="ann@example.com", role="admin")
    browser.find_element(By.CSS_SELECTOR, "#invite button").click()
    link = wait(browser, lambda d: d.find_elements(By.ID, "invite-url"))[0].text  # type: ignore[index]
    assert "/invite/" in link and "invited, no password yet" in page(browser)
    shot(browser, "07-team-invited")

    def accept(url: str, password: str) -> None:
        browser.delete_all_cookies()
        browser.get(url)
        wait(browser, lambda d: d.find_elements(By.ID, "set-password"))
        shot(browser, "07a-invitation-set-password")
        fill(browser, "#set-password", new_password1=password, new_password2=password)
        browser.find_element(By.CSS_SELECTOR, "#set-password button").click()
        wait(browser, lambda d: d.current_url == f"{stack.url}/")

    accept(link, "ann-has-a-long-passphrase")
    assert "ann@example.com" in page(browser) and "Acme" in browser.page_source
    shot(browser, "08-invited-admin-signed-in")
    browser.get(link)  # the link worked once
    assert "no longer works" in page(browser)

    browser.get(f"{stack.url}/t/acme/team/")
    fill(browser, "#invite", email="rob@example.com", role="read_only")
    browser.find_element(By.CSS_SELECTOR, "#invite button").click()
    colleague_link = wait(browser, lambda d: d.find_elements(By.ID, "invite-url"))[0].text  # type: ignore[index]
    accept(colleague_link, "rob-has-a-long-passphrase")
    browser.get(f"{stack.url}/t/acme/topics/")
    assert text(browser, "read-only-badge") == "read-only"
    assert not browser.find_elements(By.ID, "create-topic")  # not offered; sent anyway:
    browser.execute_script("""
        const form = document.createElement("form");
        form.method = "post";
        const add = (name, value) => { const input = document.createElement("input");
            input.name = name; input.value = value; form.appendChild(input); };
        add("csrfmiddlewaretoken", document.querySelector("[name=csrfmiddlewaretoken]").value);
        [["name", "forbidden"], ["partitions", "1"], ["retention_hours", "24"],
         ["cleanup_policy", "delete"]].forEach(([n, v]) => add(n, v));
        document.body.appendChild(form);
        form.submit();""")
    wait(browser, lambda d: d.find_elements(By.ID, "error-page"))
    assert "Not allowed" in browser.title and "read-only" in page(browser)
    shot(browser, "09-read-only-refused")
    browser.get(f"{stack.url}/t/acme/topics/")
    assert "forbidden" not in browser.page_source

    browser.get(f"{stack.url}/t/globex/topics/")  # another tenant: the console's own 404
    assert "Not found" in browser.title and 'class="brand"' in page(browser)
    shot(browser, "10-not-found")
    assert_no_debug_page_anywhere(stack, browser.get_cookie("sessionid")["value"])  # type: ignore[index]


def assert_no_debug_page_anywhere(stack: Stack, session: str) -> None:
    """Raw answers of the `make run` configuration to errors of every kind: console pages."""
    requests = [("GET", "/no/such/page/", None, 404), ("GET", "/t/globex/topics/", session, 404),
                ("GET", "/t/acme/consumer-groups/nope/", session, 404),
                ("GET", "/static/dashboard/missing.css", None, 404),
                ("POST", "/t/acme/topics/", session, 403),  # no CSRF token
                ("POST", "/login/", None, 403), ("GET", "/api/v1/tenants/globex/topics/", session, 404),
                ("GET", "/static/dashboard/console.css", None, 200)]  # static files without DEBUG
    for method, path, cookie, status in requests:
        request = urllib.request.Request(
            stack.url + path, method=method, data=b"" if method == "POST" else None,
            headers={"Cookie": f"sessionid={cookie}"} if cookie else {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                code, body = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            code, body = error.code, error.read().decode()
        assert code == status, (method, path, code)
        assert not any(marker in body for marker in DEBUG_PAGE_MARKERS), (method, path)
    assert seen_pages and not [url for url, source in seen_pages
                               if any(marker in source for marker in DEBUG_PAGE_MARKERS)]


@pytest.fixture
def billing_group(kafka_broker) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """acme's group billing, committed on 1 of 2 partitions of acme.orders (operator listener)."""
    config = client_config(kafka_broker.bootstrap)
    create_topic(kafka_broker.bootstrap, "acme.orders", 2)
    produce(config, "acme.orders", 100, partitions=2)
    consumer = group_consumer(config, "acme.billing", "acme.orders")
    consumer.unsubscribe()
    from confluent_kafka import TopicPartition
    consumer.assign([TopicPartition("acme.orders", 0, 0)])
    assert consume(consumer, 20) == 20
    consumer.close()
    yield


def test_a_slow_or_stopped_broker_gives_a_clear_message(stack: Stack, kafka_broker,  # type: ignore[no-untyped-def]
                                                       billing_group, browser: webdriver.Chrome) -> None:
    sign_in(browser, stack, "admin-acme")
    browser.get(f"{stack.url}/t/acme/consumer-groups/")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-group="billing"]'), timeout=40)
    shot(browser, "10a-groups-list")
    browser.get(f"{stack.url}/t/acme/consumer-groups/billing/")
    wait(browser, lambda d: text(d, "live") == "live")
    # lag counts the partition the group never committed on, from its log start
    wait(browser, lambda d: "none (from log start)" in d.find_element(By.ID, "partitions").text)
    assert int(text(browser, "total-lag")) == 80
    shot(browser, "11-group-uncommitted-partition")

    def preview_says_brokers_did_not_answer() -> str:
        browser.get(f"{stack.url}/t/acme/consumer-groups/billing/reset/")
        fill(browser, "#reset-form", strategy="earliest", topic="orders")
        browser.find_element(By.CSS_SELECTOR, "#reset-form button[name=preview]").click()
        message = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview .error"),
                       timeout=90)[0].text  # type: ignore[index]
        assert browser.find_element(By.ID, "reset-form")  # the rest of the page is still there
        page(browser)
        return message

    process = kafka_broker.process.process
    os.kill(process.pid, signal.SIGSTOP)  # slow: connected, never answering
    try:
        assert "did not answer" in preview_says_brokers_did_not_answer()
        shot(browser, "12-reset-preview-broker-slow")
    finally:
        os.kill(process.pid, signal.SIGCONT)
    kafka_broker.process.stop(timeout=10)  # down
    assert "did not answer" in preview_says_brokers_did_not_answer()
    shot(browser, "13-reset-preview-broker-down")
    for path in ("topics/", "quotas/", "consumer-groups/billing/"):
        started = time.monotonic()
        browser.get(f"{stack.url}/t/acme/{path}")
        assert "Server error" not in browser.title and browser.find_elements(By.TAG_NAME, "h1"), path
        page(browser)
        assert time.monotonic() - started < 60
