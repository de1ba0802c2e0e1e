"""The Celery application: controller tasks and periodic jobs of the control plane, on Redis."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "service.settings.dev")

app = Celery("kafkasaas")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
