#!/usr/bin/env bash
# The web process of `make run`: migrate, first-start bootstrap, then the ASGI server.
set -euo pipefail
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py bootstrap_demo --web "http://127.0.0.1:${WEB_PORT:-8000}/"
exec .venv/bin/daphne -b 127.0.0.1 -p "${WEB_PORT:-8000}" service.asgi:application
