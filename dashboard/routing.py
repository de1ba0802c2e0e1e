"""WebSocket routes of the console."""

from django.urls import path

from .consumers import LagConsumer

websocket_urlpatterns = [
    path("ws/tenants/<slug:slug>/consumer-groups/", LagConsumer.as_asgi()),
    path("ws/tenants/<slug:slug>/consumer-groups/<path:group>/", LagConsumer.as_asgi()),
]
