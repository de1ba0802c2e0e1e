"""Production: secrets must come from the environment."""

import os

from .base import *  # noqa: F403

SECRET_KEY = os.environ["SECRET_KEY"]
STATIC_ROOT = VAR_DIR / "static"  # noqa: F405
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
