"""Project wiring for the control plane: settings, URLs, ASGI and the Celery app. No business logic."""

from .celery import app as celery_app

__all__ = ["celery_app"]
