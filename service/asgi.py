"""ASGI entry point (daphne serves it): HTTP to Django; static files via WhiteNoise."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "service.settings.dev")

application = get_asgi_application()
