"""Pages that depend on the cluster degrade instead of failing: brokers or ZooKeeper not
answering is an outage of something else, shown as such (503 with the console's layout, or a
JSON ``detail`` under ``/api/``), never as a server error.

Views that can keep the rest of their page catch these errors themselves and show them in the
section concerned; this is the net under every other view.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from tenants.kafka_admin import KafkaRequestFailed

log = logging.getLogger(__name__)
CLUSTER_ERRORS = (KafkaRequestFailed, KazooException, KazooTimeoutError)


def unavailable_message(exc: BaseException) -> str:
    if isinstance(exc, KafkaRequestFailed):
        return f"The brokers did not answer in time (a broker may be down or slow): {exc}"
    return f"ZooKeeper did not answer: {exc or type(exc).__name__}"


class ClusterUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, CLUSTER_ERRORS):
            return None
        message = unavailable_message(exception)
        log.warning("%s %s: %s", request.method, request.path, message)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": message}, status=503)
        return render(request, "dashboard/unavailable.html", {"error": message}, status=503)
